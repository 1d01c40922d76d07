// Stand-in of torch/csrc/autograd/python_variable.h's two calls the MPS
// bridge makes: whether a Python object is a torch.Tensor, and its
// at::Tensor. Here PyTorch has no MPS device (Debian's torch 1.13, CPU
// only): an "MPS tensor" is a CPU tensor whose storage is the contents of a
// metal-cpp stand-in MTL::Buffer made by mfagen._mfagen.mps_standin (tests
// wrap them in a tensor subclass reporting device "mps",
// tests/python/mps_standin.py). THPVariable_Unpack finds that buffer from
// the storage's address: is_mps() is true and storage().data() is the
// MTL::Buffer*, as on PyTorch's MPS storages. Any other tensor unpacks with
// is_mps() false.
#pragma once

#include <Python.h>

#include <ATen/Tensor.h>

bool THPVariable_Check(PyObject* object);
// By value here (PyTorch returns a const reference to the tensor the object holds).
at::Tensor THPVariable_Unpack(PyObject* object);
