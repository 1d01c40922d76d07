// .npy reading and writing: byte-exact against files NumPy 1.24 wrote
// (np.save, np.lib.format.write_array), round trips of every dtype, and the
// errors a user sees for files we cannot take.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <iterator>

#include "io/npy.h"
#include "io/npy_header.h"

namespace mfagen::io {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::vector<std::byte> bytes_of(std::string_view s) {
  auto p = reinterpret_cast<const std::byte*>(s.data());
  return {p, p + s.size()};
}

std::string as_string(const std::vector<std::byte>& b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

std::string file_contents(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// A .npy file with the given version and header dict, padded like NumPy.
std::string make_npy(std::string_view dict, std::string_view data, int major = 1, size_t align = 64) {
  size_t length_size = major == 1 ? 2 : 4;
  size_t header_len = dict.size() + 1;
  header_len += (align - (6 + 2 + length_size + header_len) % align) % align;
  std::string out = "\x93NUMPY";
  out += char(major);
  out += char(0);
  for (size_t i = 0; i < length_size; ++i) out += char((header_len >> (8 * i)) & 0xff);
  out += dict;
  out.append(header_len - dict.size() - 1, ' ');
  out += '\n';
  out += data;
  return out;
}

std::string pad(size_t n) { return std::string(n, ' '); }

// np.save(f, np.arange(6, dtype='<f4').reshape(2, 3))
const std::string kNumpyF4_2x3 =
    std::string("\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 69) + pad(58) +
    "\n" + std::string("\x00\x00\x00\x00\x00\x00\x80?\x00\x00\x00@\x00\x00@@\x00\x00\x80@\x00\x00\xa0@", 24);

TEST(Npy, ReadsNumpyFloat32Matrix) {
  ASSERT_EQ(kNumpyF4_2x3.size(), 152u);
  NpyArray a = parse_npy(bytes_of(kNumpyF4_2x3), "a.npy");
  EXPECT_EQ(a.dtype, "<f4");
  EXPECT_EQ(a.shape, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(a.element_count(), 6u);
  EXPECT_EQ(a.element_size(), 4u);
  EXPECT_EQ(a.values<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
}

TEST(Npy, WritesExactlyWhatNumpyWrites) {
  std::vector<float> values{0, 1, 2, 3, 4, 5};
  NpyArray a = NpyArray::from<float>(values, {2, 3});
  EXPECT_EQ(npy_header(a) + as_string(a.data), kNumpyF4_2x3);

  // np.save(f, np.array(3.5)), a 0-d array: no growth padding.
  NpyArray scalar = NpyArray::from<double>(std::vector<double>{3.5}, {});
  EXPECT_EQ(npy_header(scalar),
            std::string("\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 65) +
                pad(62) + "\n");

  // np.save(f, np.array([True, False, True]))
  NpyArray flags{"|b1", {3}, bytes_of(std::string("\x01\x00\x01", 3))};
  EXPECT_EQ(npy_header(flags),
            std::string("\x93NUMPY\x01\x00v\x00{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", 67) +
                pad(60) + "\n");
}

TEST(Npy, ReadsNumpy0dEmptyBoolAndBytes) {
  NpyArray scalar = parse_npy(
      bytes_of(std::string("\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 65) +
               pad(62) + "\n" + std::string("\x00\x00\x00\x00\x00\x00\x0c@", 8)),
      "s.npy");
  EXPECT_TRUE(scalar.shape.empty());
  EXPECT_EQ(scalar.element_count(), 1u);
  EXPECT_EQ(scalar.values<double>(), std::vector<double>{3.5});

  // np.zeros((0, 3), dtype='<i2')
  NpyArray empty = parse_npy(
      bytes_of(std::string("\x93NUMPY\x01\x00v\x00{'descr': '<i2', 'fortran_order': False, 'shape': (0, 3), }", 69) +
               pad(58) + "\n"),
      "e.npy");
  EXPECT_EQ(empty.shape, (std::vector<uint64_t>{0, 3}));
  EXPECT_EQ(empty.element_count(), 0u);
  EXPECT_TRUE(empty.data.empty());

  // np.arange(4, dtype=np.uint8)
  NpyArray u8 = parse_npy(
      bytes_of(std::string("\x93NUMPY\x01\x00v\x00{'descr': '|u1', 'fortran_order': False, 'shape': (4,), }", 67) +
               pad(60) + "\n" + std::string("\x00\x01\x02\x03", 4)),
      "u.npy");
  EXPECT_EQ(u8.values<uint8_t>(), (std::vector<uint8_t>{0, 1, 2, 3}));
}

TEST(Npy, ReadsVersions2And3) {
  // np.lib.format.write_array(f, np.arange(3, dtype='<i4'), version=(2, 0)) and (3, 0)
  for (char major : {'\x02', '\x03'}) {
    std::string file = std::string("\x93NUMPY", 6) + major +
                       std::string("\x00t\x00\x00\x00{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", 62) +
                       pad(58) + "\n" + std::string("\x00\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00", 12);
    ASSERT_EQ(file.size(), 140u);
    NpyArray a = parse_npy(bytes_of(file), "v.npy");
    EXPECT_EQ(a.values<int32_t>(), (std::vector<int32_t>{0, 1, 2}));
  }
}

TEST(Npy, HeaderVariants) {
  // Old NumPy: 16-byte alignment, Python 2 long suffixes.
  NpyArray old = parse_npy(
      bytes_of(make_npy("{'descr': '<i8', 'fortran_order': False, 'shape': (2L,), }", std::string(16, '\0'), 1, 16)),
      "old.npy");
  EXPECT_EQ(old.shape, std::vector<uint64_t>{2});
  // Other writers: any key order, double quotes, no trailing comma, odd spacing.
  NpyArray other = parse_npy(
      bytes_of(make_npy("{ \"shape\" :(1 ,2) ,\"fortran_order\":False,'descr' : \"<u2\"}", std::string(4, '\0'))),
      "other.npy");
  EXPECT_EQ(other.dtype, "<u2");
  EXPECT_EQ(other.shape, (std::vector<uint64_t>{1, 2}));
  // Native and explicit byte orders of 1-byte types map to NumPy's spelling.
  EXPECT_EQ(parse_npy(bytes_of(make_npy("{'descr': '=f4', 'fortran_order': False, 'shape': (), }",
                                        std::string(4, '\0'))),
                      "n.npy")
                .dtype,
            "<f4");
  EXPECT_EQ(parse_npy(bytes_of(make_npy("{'descr': '<i1', 'fortran_order': False, 'shape': (1,), }", "x")), "i.npy")
                .dtype,
            "|i1");
}

TEST(Npy, CanonicalDtype) {
  EXPECT_EQ(canonical_dtype("<f2"), "<f2");
  EXPECT_EQ(canonical_dtype("=i8"), "<i8");
  EXPECT_EQ(canonical_dtype(">b1"), "|b1");
  EXPECT_EQ(canonical_dtype("|u1"), "|u1");
  EXPECT_EQ(canonical_dtype(">f4"), "");
  EXPECT_EQ(canonical_dtype("|f4"), "");
  EXPECT_EQ(canonical_dtype("<c8"), "");
  EXPECT_EQ(canonical_dtype("<U5"), "");
  EXPECT_EQ(canonical_dtype("f4"), "");
}

class NpyFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           fmt_name(::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static std::string fmt_name(const char* test) { return std::string("mfagen_npy_test_") + test + "_" + std::to_string(::getpid()); }

  template <class T>
  void round_trip(std::vector<T> values, std::vector<uint64_t> shape) {
    NpyArray a = NpyArray::from<T>(values, shape);
    auto path = dir_ / (std::string(npy_dtype_for<T>().substr(1)) + ".npy");
    write_npy_atomic(path, a);
    NpyArray b = read_npy(path);
    EXPECT_EQ(b.dtype, a.dtype);
    EXPECT_EQ(b.shape, a.shape);
    EXPECT_EQ(b.values<T>(), values);
    // The data starts 64-byte aligned, as NumPy's own files.
    EXPECT_EQ((std::filesystem::file_size(path) - a.data.size()) % 64, 0u);
  }

  std::filesystem::path write_raw(std::string_view name, std::string_view content) {
    auto path = dir_ / name;
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }

  std::string read_error(std::string_view name, std::string_view content) {
    auto path = write_raw(name, content);
    try {
      read_npy(path);
    } catch (const NpyError& e) {
      std::string message = e.what();
      EXPECT_THAT(message, HasSubstr(path.string()));
      return message;
    }
    ADD_FAILURE() << "no error for " << name;
    return "";
  }

  std::filesystem::path dir_;
};

TEST_F(NpyFiles, RoundTripsEveryDtype) {
  round_trip<float>({1.5f, -2.25f, 1e30f, 0.f, -0.f, 7.f}, {2, 3});
  round_trip<double>({1.0 / 3, -1e300}, {2});
  round_trip<int32_t>({INT32_MIN, -1, 0, INT32_MAX}, {2, 1, 2});
  round_trip<uint32_t>({0, 1, UINT32_MAX}, {3});
  round_trip<int64_t>({INT64_MIN, INT64_MAX}, {2});
  round_trip<uint64_t>({UINT64_MAX}, {});
  round_trip<int16_t>({-32768, 32767, 5}, {3, 1});
  round_trip<uint16_t>({0x3c00, 0xffff}, {2});  // also how half/bfloat bits travel
  round_trip<int8_t>({-128, 127}, {2});
  round_trip<uint8_t>({0, 255, 9}, {1, 3});
  round_trip<float>({}, {0, 4});

  // <f2 and |b1 have no C++ element type here: raw bytes.
  for (auto [dtype, data] : {std::pair<std::string, std::string>{"<f2", std::string("\x00\x3c\x00\xc0", 4)},
                             {"|b1", std::string("\x01\x00\x01", 3)}}) {
    NpyArray a{dtype, {data.size() / dtype_size(dtype)}, bytes_of(data)};
    write_npy_atomic(dir_ / "raw.npy", a);
    NpyArray b = read_npy(dir_ / "raw.npy");
    EXPECT_EQ(b.dtype, dtype);
    EXPECT_EQ(b.shape, a.shape);
    EXPECT_EQ(b.data, a.data);
  }
}

TEST_F(NpyFiles, LargeHeaderUsesVersion2) {
  // A 30000-d array of ones has a header longer than 65535 bytes.
  NpyArray a{"|u1", std::vector<uint64_t>(30000, 1), bytes_of("z")};
  write_npy_atomic(dir_ / "big.npy", a);
  std::string content = file_contents(dir_ / "big.npy");
  EXPECT_EQ(content[6], '\x02');
  NpyArray b = read_npy(dir_ / "big.npy");
  EXPECT_EQ(b.shape.size(), 30000u);
  EXPECT_EQ(as_string(b.data), "z");
}

TEST_F(NpyFiles, WriteReplacesAtomicallyAndLeavesNoTemporaries) {
  write_npy_atomic(dir_ / "out.npy", NpyArray::from<int32_t>(std::vector<int32_t>{1}));
  write_npy_atomic(dir_ / "out.npy", NpyArray::from<int32_t>(std::vector<int32_t>{2, 3}));
  EXPECT_EQ(read_npy(dir_ / "out.npy").values<int32_t>(), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), {}), 1);
}

TEST_F(NpyFiles, WriteRejectsInconsistentArrays) {
  EXPECT_THROW(write_npy_atomic(dir_ / "a.npy", NpyArray{"<f4", {3}, bytes_of("12345678")}), NpyError);
  EXPECT_THROW(write_npy_atomic(dir_ / "b.npy", NpyArray{"<c8", {1}, bytes_of("12345678")}), NpyError);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "a.npy"));
  EXPECT_THROW(write_npy_atomic(dir_ / "missing" / "c.npy", NpyArray::from<float>(std::vector<float>{1})),
               std::system_error);
}

TEST_F(NpyFiles, Errors) {
  const std::string f4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  EXPECT_THAT(read_error("magic.npy", "PK\x03\x04 not numpy at all"), HasSubstr("bad magic"));
  EXPECT_THAT(read_error("empty.npy", ""), HasSubstr("bad magic"));
  EXPECT_THAT(read_error("version.npy", make_npy(f4, std::string(8, '\0')).replace(6, 1, "\x04")),
              HasSubstr("version 4.0"));
  EXPECT_THAT(read_error("short_header.npy", make_npy(f4, "").substr(0, 40)), HasSubstr("truncated header"));
  EXPECT_THAT(read_error("short_data.npy", make_npy(f4, std::string(7, '\0'))),
              AllOf(HasSubstr("truncated data"), HasSubstr("needs 8 bytes"), HasSubstr("has 7")));
  EXPECT_THAT(read_error("long_data.npy", make_npy(f4, std::string(9, '\0'))), HasSubstr("1 unexpected bytes"));
  EXPECT_THAT(read_error("complex.npy", make_npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
                                                 std::string(8, '\0'))),
              AllOf(HasSubstr("unsupported dtype '<c8'"), HasSubstr("<f4 <f2")));
  EXPECT_THAT(read_error("big_endian.npy", make_npy("{'descr': '>i4', 'fortran_order': False, 'shape': (1,), }",
                                                    std::string(4, '\0'))),
              AllOf(HasSubstr("big-endian"), HasSubstr("astype('<i4')")));
  EXPECT_THAT(read_error("fortran.npy", make_npy("{'descr': '<f4', 'fortran_order': True, 'shape': (1, 2), }",
                                                 std::string(8, '\0'))),
              HasSubstr("fortran_order is True"));
  EXPECT_THAT(read_error("structured.npy",
                         make_npy("{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': (1,), }",
                                  std::string(8, '\0'))),
              HasSubstr("structured dtypes"));
  EXPECT_THAT(read_error("syntax.npy", make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,) ", "")),
              HasSubstr("header dict"));
  EXPECT_THAT(read_error("no_shape.npy", make_npy("{'descr': '<f4', 'fortran_order': False}", "")),
              HasSubstr("no 'shape' key"));
  EXPECT_THAT(read_error("bad_shape.npy", make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", "")),
              HasSubstr("non-negative"));
  EXPECT_THAT(read_error("huge.npy", make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': "
                                              "(4294967296, 4294967296)}",
                                              "")),
              HasSubstr("too large"));
  try {
    read_npy(dir_ / "does_not_exist.npy");
    ADD_FAILURE();
  } catch (const NpyError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("does_not_exist.npy"), HasSubstr("no such file")));
  }
}

TEST(NpyHeaderDict, ParsesPythonLiterals) {
  NpyHeaderDict d = parse_npy_header_dict("{'fortran_order': False, 'shape': (), 'descr': '|b1'}");
  EXPECT_EQ(d.descr, "|b1");
  EXPECT_FALSE(d.fortran_order);
  EXPECT_TRUE(d.shape.empty());
  d = parse_npy_header_dict("{'descr':'<f4','fortran_order':True,'shape':(7,)}\n   ");
  EXPECT_TRUE(d.fortran_order);
  EXPECT_EQ(d.shape, std::vector<uint64_t>{7});
}

TEST(NpyHeaderDict, ExplainsErrors) {
  auto error = [](std::string_view text) {
    try {
      parse_npy_header_dict(text);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error("['descr']"), HasSubstr("not a dict"));
  EXPECT_THAT(error("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}"),
              HasSubstr("unexpected key 'extra'"));
  EXPECT_THAT(error("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}"), HasSubstr("twice"));
  EXPECT_THAT(error("{'descr': 4, 'fortran_order': False, 'shape': (1,)}"), HasSubstr("'descr' is an integer"));
  EXPECT_THAT(error("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}"), HasSubstr("'fortran_order'"));
  EXPECT_THAT(error("{'descr': '<f4', 'fortran_order': False, 'shape': [1]}"), HasSubstr("'shape' is a list"));
  EXPECT_THAT(error("{'descr': '<f4' 'fortran_order': False}"), HasSubstr("column"));
  EXPECT_THAT(error("{'descr: '<f4'}"), HasSubstr("header dict"));
  EXPECT_THAT(error("{'shape': (99999999999999999999999,)}"), HasSubstr("too large"));
}

// Hostile nesting in a header (found by fuzz/): a clear error at a fixed
// depth, not a stack overflow.
TEST(Npy, DeeplyNestedHeadersAreRefused) {
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + std::string(50000, '(') +
                           std::string(50000, ')') + ", }";
  const std::string file = make_npy(dict, "", 2);
  try {
    (void)parse_npy(std::as_bytes(std::span(file.data(), file.size())), "deep.npy");
    FAIL() << "expected an error";
  } catch (const NpyError& e) {
    EXPECT_NE(std::string(e.what()).find("deep.npy"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nested deeper than 16 levels"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mfagen::io
