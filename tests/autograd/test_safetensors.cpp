// Tests of the safetensors reader and writer: round trips, the exact on-disk layout, one test
// per malformed-file refusal, and durable saving (a failed save never harms the target).
#include <gtest/gtest.h>

#include "tests/test_util.h"
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "autograd/ops.h"
#include "autograd/safetensors.h"
#include "autograd/tensor.h"

namespace fs = std::filesystem;
using namespace ag::testing_util;
using namespace ag;

namespace {


// A file from its parts, built by hand (not by our writer): u64 N, header, buffer.
std::string file_from(const std::string& header, const std::string& buffer = "") {
  const uint64_t n = header.size();
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xFF);  // little-endian
  return out + header + buffer;
}

template <class T>
std::string bytes_of(const std::vector<T>& values) {
  std::string out(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

uint64_t header_size(const std::string& file) {
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>(file[i])) << (8 * i);
  return n;
}

// parse() must refuse these bytes with a message "bad.safetensors: ...<needle>...".
void expect_refused(const std::string& bytes, const std::string& needle) {
  const std::string msg = error_of([&] { SafeTensorsFile::parse(bytes, "bad.safetensors"); });
  EXPECT_EQ(msg.rfind("bad.safetensors: ", 0), 0u) << msg;
  EXPECT_NE(msg.find(needle), std::string::npos) << "message: " << msg << "\nexpected to mention: " << needle;
}

// A one-tensor file whose header entry is `entry` and whose buffer is `buffer`.
void expect_entry_refused(const std::string& entry, const std::string& buffer, const std::string& needle) {
  expect_refused(file_from(R"({"t":)" + entry + "}", buffer), needle);
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A scratch directory under the system temp directory, removed at the end of the test.
class SafeTensorsTempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("attograd_test_safetensors_" + std::string(info->name()) + "_" + std::to_string(::getpid()) + "_" +
            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, ec);  // in case a test made it read-only
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // Every file name in the directory, so tests can check that no temporary file is left.
  std::vector<std::string> listing() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  fs::path dir_;
};

// A small, valid file with a few tensors of every attograd dtype.
std::vector<std::pair<std::string, Tensor>> sample_tensors() {
  return {
      {"w", Tensor::from_vector(std::vector<float>{1.5f, -2.0f, 3.25f, 0.0f, -0.0f, 1e-30f}, {2, 3})},
      {"d", Tensor::from_vector(std::vector<double>{0.1, -1e300, 3.0, 4.0}, {4}, DType::Float64)},
      {"ids", Tensor::from_vector(std::vector<int64_t>{std::numeric_limits<int64_t>::min(), -1, 0,
                                                       std::numeric_limits<int64_t>::max()},
                                  {2, 2})},
      {"mask", Tensor::from_vector(std::vector<bool>{true, false, false, true, true}, {5})},
  };
}

}  // namespace

// ---- round trips ------------------------------------------------------------------------------

TEST_F(SafeTensorsTempDir, RoundTripsEveryDtypeAndMetadata) {
  const auto tensors = sample_tensors();
  const std::map<std::string, std::string> meta = {{"format", "pt"}, {"note", "caf\xC3\xA9 \"quoted\""}};
  save_safetensors(path("m.safetensors"), tensors, meta);

  const SafeTensorsFile f = SafeTensorsFile::load(path("m.safetensors"));
  EXPECT_EQ(f.metadata(), meta);
  EXPECT_EQ(f.names(), (std::vector<std::string>{"d", "ids", "mask", "w"}));
  EXPECT_EQ(f.info("w").dtype, "F32");
  EXPECT_EQ(f.info("d").dtype, "F64");
  EXPECT_EQ(f.info("ids").dtype, "I64");
  EXPECT_EQ(f.info("mask").dtype, "BOOL");

  const Tensor w = f.get("w");
  EXPECT_EQ(w.dtype(), DType::Float32);
  EXPECT_EQ(w.shape(), (Shape{2, 3}));
  EXPECT_EQ(w.to_vector<float>(), tensors[0].second.to_vector<float>());
  EXPECT_TRUE(std::signbit(w.to_vector<float>()[4]));  // -0.0 kept bit for bit

  const Tensor d = f.get("d");
  EXPECT_EQ(d.dtype(), DType::Float64);
  EXPECT_EQ(d.to_vector<double>(), tensors[1].second.to_vector<double>());

  const Tensor ids = f.get("ids");
  EXPECT_EQ(ids.dtype(), DType::Int64);
  EXPECT_EQ(ids.shape(), (Shape{2, 2}));
  EXPECT_EQ(ids.to_vector<int64_t>(), tensors[2].second.to_vector<int64_t>());

  const Tensor mask = f.get("mask");
  EXPECT_EQ(mask.dtype(), DType::Bool);
  const bool* m = mask.data<bool>();
  EXPECT_EQ(std::vector<bool>(m, m + 5), (std::vector<bool>{true, false, false, true, true}));

  // load_safetensors gives the same, keyed by name.
  const auto all = load_safetensors(path("m.safetensors"));
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all.at("d").to_vector<double>(), d.to_vector<double>());
}

TEST_F(SafeTensorsTempDir, RoundTripsScalarAndEmptyTensors) {
  save_safetensors(path("s.safetensors"), {{"scalar", Tensor::scalar(3.5)},
                                           {"empty", Tensor::empty({0}, DType::Float64)},
                                           {"empty2d", Tensor::empty({3, 0}, DType::Int64)},
                                           {"after", Tensor::from_vector(std::vector<float>{7.0f}, {1})}});
  const SafeTensorsFile f = SafeTensorsFile::load(path("s.safetensors"));
  EXPECT_TRUE(f.info("scalar").shape.empty());
  EXPECT_EQ(f.info("scalar").end - f.info("scalar").begin, 4u);
  EXPECT_EQ(f.info("empty").begin, f.info("empty").end);
  EXPECT_TRUE(f.bytes("empty").empty());

  const Tensor s = f.get("scalar");
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item(), 3.5);
  const Tensor e = f.get("empty");
  EXPECT_EQ(e.shape(), (Shape{0}));
  EXPECT_EQ(e.dtype(), DType::Float64);
  const Tensor e2 = f.get("empty2d");
  EXPECT_EQ(e2.shape(), (Shape{3, 0}));
  EXPECT_EQ(e2.numel(), 0);
  EXPECT_EQ(f.get("after").item(), 7.0);
}

TEST_F(SafeTensorsTempDir, NonContiguousTensorsAreSavedRowMajor) {
  const Tensor m = Tensor::matrix({{1, 2, 3}, {4, 5, 6}});
  const Tensor mt = transpose(m, 0, 1);  // a strided view: [[1, 4], [2, 5], [3, 6]]
  save_safetensors(path("t.safetensors"), {{"mt", mt}, {"row", narrow(m, 0, 1, 1)}});
  const SafeTensorsFile f = SafeTensorsFile::load(path("t.safetensors"));
  EXPECT_EQ(f.get("mt").shape(), (Shape{3, 2}));
  EXPECT_EQ(f.get("mt").to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(f.get("row").to_vector<float>(), (std::vector<float>{4, 5, 6}));
}

TEST_F(SafeTensorsTempDir, SavingDoesNotTouchTheAutogradGraph) {
  Tensor p = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  p.requires_grad_();
  save_safetensors(path("p.safetensors"), {{"p", transpose(p, 0, 1)}});
  EXPECT_FALSE(p.grad().defined());
  EXPECT_EQ(SafeTensorsFile::load(path("p.safetensors")).get("p").to_vector<float>(),
            (std::vector<float>{1, 3, 2, 4}));
}

// ---- layout of written files ----------------------------------------------------------------

TEST(SafeTensorsLayout, HeaderIsSortedPaddedAndBufferFollowsNameOrder) {
  const std::string bytes = serialize_safetensors(
      {{"b", Tensor::from_vector(std::vector<float>{2.0f}, {1})},
       {"a", Tensor::from_vector(std::vector<float>{1.0f, 1.5f}, {2})},
       {"c", Tensor::from_vector(std::vector<bool>{true}, {1})}},
      {{"k", "v"}});
  const uint64_t n = header_size(bytes);
  EXPECT_EQ(n % 8, 0u);
  const std::string header = bytes.substr(8, n);
  // Exactly the compact JSON, then spaces: metadata, then the tensors by name.
  const std::string json_text =
      R"({"__metadata__":{"k":"v"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},)"
      R"("c":{"dtype":"BOOL","shape":[1],"data_offsets":[12,13]}})";
  EXPECT_EQ(header.substr(0, json_text.size()), json_text);
  EXPECT_EQ(header.find_first_not_of(' ', json_text.size()), std::string::npos);
  EXPECT_LT(header.size() - json_text.size(), 8u);
  // The buffer: a's floats, b's float, c's byte; nothing else.
  EXPECT_EQ(bytes.substr(8 + n), bytes_of(std::vector<float>{1.0f, 1.5f, 2.0f}) + std::string(1, '\x01'));
}

TEST(SafeTensorsLayout, EmptyFileAndScalarShapeAreWrittenAsTheSpecSays) {
  const std::string none = serialize_safetensors({});
  EXPECT_EQ(header_size(none), 8u);  // "{}" padded to 8
  EXPECT_EQ(none.substr(8), "{}      ");
  EXPECT_EQ(SafeTensorsFile::parse(none, "none").size(), 0u);

  const std::string scalar = serialize_safetensors({{"s", Tensor::scalar(1.0, DType::Float64)}});
  EXPECT_NE(scalar.find(R"("shape":[])"), std::string::npos);
}

TEST(SafeTensorsLayout, WriterRefusesBadArguments) {
  const Tensor t = Tensor::zeros({1});
  EXPECT_NE(error_of<std::invalid_argument>([&] { serialize_safetensors({{"x", t}, {"y", t}, {"x", t}}); })
                .find("duplicate tensor name 'x'"),
            std::string::npos);
  EXPECT_NE(error_of<std::invalid_argument>([&] { serialize_safetensors({{"__metadata__", t}}); }).find("reserved"),
            std::string::npos);
  EXPECT_NE(error_of<std::invalid_argument>([&] { serialize_safetensors({{"u", Tensor()}}); }).find("undefined"),
            std::string::npos);
  EXPECT_NE(error_of<std::invalid_argument>([&] { serialize_safetensors({{"bad\xFF", t}}); }).find("UTF-8"),
            std::string::npos);
  EXPECT_NE(error_of<std::invalid_argument>([&] { serialize_safetensors({}, {{"k", "\xC3"}}); }).find("UTF-8"),
            std::string::npos);
}

// ---- reading files from other writers ----------------------------------------------------------

TEST(SafeTensorsRead, AcceptsUnpaddedHeadersAnyKeyOrderAndAnyBufferOrder) {
  // Hand-built: no padding, metadata last, the buffer ordered z then a (not by name),
  // and dtypes attograd cannot hold (U8, F16) still readable through the raw layer.
  const std::string header =
      R"({"z":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("a":{"data_offsets":[8,11],"shape":[3],"dtype":"U8"},)"
      R"("h":{"dtype":"F16","shape":[1],"data_offsets":[11,13]},"__metadata__":{"x":"y"}})";
  const std::string buffer = bytes_of(std::vector<float>{4.0f, 5.0f}) + "\x01\x02\x03" + std::string("\x00\x3C", 2);
  ASSERT_NE(header.size() % 8, 0u);  // really unpadded
  const SafeTensorsFile f = SafeTensorsFile::parse(file_from(header, buffer), "other.safetensors");
  EXPECT_EQ(f.names(), (std::vector<std::string>{"a", "h", "z"}));
  EXPECT_EQ(f.metadata().at("x"), "y");
  EXPECT_TRUE(f.has("a"));
  EXPECT_FALSE(f.has("b"));
  EXPECT_EQ(f.info("a").shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(f.info("a").begin, 8u);
  const auto a = f.bytes("a");
  EXPECT_EQ(std::vector<uint8_t>(a.begin(), a.end()), (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_EQ(f.get("z").to_vector<float>(), (std::vector<float>{4.0f, 5.0f}));

  const std::string msg = error_of([&] { f.get("h"); });
  EXPECT_NE(msg.find("unsupported dtype for attograd"), std::string::npos) << msg;
  EXPECT_NE(msg.find("F16"), std::string::npos) << msg;
  EXPECT_NE(error_of([&] { f.info("nope"); }).find("no tensor named 'nope'"), std::string::npos);
  EXPECT_NE(error_of([&] { f.get("nope"); }).find("other.safetensors: "), std::string::npos);
}

TEST(SafeTensorsRead, AcceptsEveryDtypeOfTheSpecAndNullMetadata) {
  const std::vector<std::pair<std::string, size_t>> dtypes = {
      {"BOOL", 1}, {"U8", 1}, {"I8", 1},  {"I16", 2}, {"U16", 2}, {"F16", 2}, {"BF16", 2},
      {"I32", 4},  {"U32", 4}, {"F32", 4}, {"F64", 8}, {"I64", 8}, {"U64", 8}};
  nlohmann::json header = {{"__metadata__", nullptr}};
  uint64_t offset = 0;
  for (const auto& [name, size] : dtypes) {
    EXPECT_EQ(safetensors_dtype_size(name), size) << name;
    header["t_" + name] = {{"dtype", name}, {"shape", {2}}, {"data_offsets", {offset, offset + 2 * size}}};
    offset += 2 * size;
  }
  EXPECT_EQ(safetensors_dtype_size("F8"), 0u);
  const SafeTensorsFile f = SafeTensorsFile::parse(file_from(header.dump(), std::string(offset, '\0')), "all");
  EXPECT_EQ(f.size(), dtypes.size());
  EXPECT_TRUE(f.metadata().empty());
}

// ---- refusals: one test per malformed-file check ------------------------------------------------

TEST_F(SafeTensorsTempDir, RefusesMissingFile) {
  const std::string p = path("absent.safetensors");
  const std::string msg = error_of([&] { SafeTensorsFile::load(p); });
  EXPECT_EQ(msg.rfind(p + ": ", 0), 0u) << msg;
  EXPECT_NE(msg.find("cannot open"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not found"), std::string::npos) << msg;
}

TEST_F(SafeTensorsTempDir, RefusesADirectory) {
  const std::string msg = error_of([&] { SafeTensorsFile::load(dir_.string()); });
  EXPECT_NE(msg.find("not a regular file"), std::string::npos) << msg;
}

TEST_F(SafeTensorsTempDir, RefusesEmptyFileThroughLoad) {
  std::ofstream(path("empty.safetensors")).close();
  const std::string msg = error_of([&] { SafeTensorsFile::load(path("empty.safetensors")); });
  EXPECT_EQ(msg.rfind(path("empty.safetensors") + ": ", 0), 0u) << msg;
  EXPECT_NE(msg.find("truncated or empty"), std::string::npos) << msg;
}

TEST(SafeTensorsRefuse, FewerThanEightBytes) {
  expect_refused("", "truncated or empty");
  expect_refused(std::string("\x02\x00\x00\x00\x00\x00\x00", 7), "truncated or empty");
}

TEST(SafeTensorsRefuse, HeaderSizeAboveTheLimit) {
  std::string bytes = file_from("{}");
  const uint64_t n = 100'000'001;
  std::memcpy(bytes.data(), &n, 8);
  expect_refused(bytes, "too large");
}

TEST(SafeTensorsRefuse, HeaderSizeBeyondTheFile) {
  std::string bytes = file_from("{}");  // 10 bytes; now claim a 64-byte header
  const uint64_t n = 64;
  std::memcpy(bytes.data(), &n, 8);
  expect_refused(bytes, "runs past the end of the file");
}

TEST(SafeTensorsRefuse, HeaderNotUtf8) {
  expect_refused(file_from("{\"caf\xC3\x28\":{}}"), "not valid UTF-8");
  expect_refused(file_from("{\"\xED\xA0\x80\":1}"), "not valid UTF-8");  // a UTF-16 surrogate
  expect_refused(file_from("{\"\xC0\xAF\":1}"), "not valid UTF-8");      // overlong '/'
}

TEST(SafeTensorsRefuse, HeaderNotJson) {
  expect_refused(file_from(R"({"t": {"dtype": "F32",)"), "not valid JSON");
  expect_refused(file_from(""), "not valid JSON");
  expect_refused(file_from(std::string("{}\0\0\0\0\0\0", 8)), "not valid JSON");  // NUL padding is not JSON
}

TEST(SafeTensorsRefuse, HeaderNotAnObject) {
  expect_refused(file_from("[1, 2]"), "not an object");
  expect_refused(file_from("\"text\""), "not an object");
}

TEST(SafeTensorsRefuse, DuplicateKeys) {
  const std::string e = R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  expect_refused(file_from(R"({"t":)" + e + R"(,"t":)" + e + "}", std::string(4, '\0')), "duplicate key 't'");
  expect_refused(file_from(R"({"t":{"dtype":"F32","dtype":"F64","shape":[1],"data_offsets":[0,4]}})",
                           std::string(4, '\0')),
                 "duplicate key 'dtype'");
}

TEST(SafeTensorsRefuse, EntryNotAnObject) { expect_entry_refused("[1, 2]", "", "not a JSON object"); }

TEST(SafeTensorsRefuse, EntryMissingAField) {
  expect_entry_refused(R"({"shape":[1],"data_offsets":[0,4]})", std::string(4, '\0'), "missing \"dtype\"");
  expect_entry_refused(R"({"dtype":"F32","data_offsets":[0,4]})", std::string(4, '\0'), "missing \"shape\"");
  expect_entry_refused(R"({"dtype":"F32","shape":[1]})", std::string(4, '\0'), "missing \"data_offsets\"");
}

TEST(SafeTensorsRefuse, EntryFieldsOfTheWrongJsonType) {
  const std::string buf(4, '\0');
  expect_entry_refused(R"({"dtype":32,"shape":[1],"data_offsets":[0,4]})", buf, "\"dtype\" is not a JSON string");
  expect_entry_refused(R"({"dtype":"F32","shape":1,"data_offsets":[0,4]})", buf, "\"shape\" is not a JSON array");
  expect_entry_refused(R"({"dtype":"F32","shape":[1.0],"data_offsets":[0,4]})", buf, "non-integer");
  expect_entry_refused(R"({"dtype":"F32","shape":["1"],"data_offsets":[0,4]})", buf, "non-integer");
  expect_entry_refused(R"({"dtype":"F32","shape":[1],"data_offsets":{"a":0}})", buf, "two integers");
  expect_entry_refused(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4,8]})", buf, "two integers");
  expect_entry_refused(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4.0]})", buf, "non-negative integer");
  expect_entry_refused(R"({"dtype":"F32","shape":[1],"data_offsets":[-4,4]})", buf, "non-negative integer");
}

TEST(SafeTensorsRefuse, NegativeShapeDimension) {
  expect_entry_refused(R"({"dtype":"F32","shape":[-1],"data_offsets":[0,4]})", std::string(4, '\0'),
                       "negative shape dimension -1");
}

TEST(SafeTensorsRefuse, UnknownDtype) {
  expect_entry_refused(R"({"dtype":"F128","shape":[1],"data_offsets":[0,16]})", std::string(16, '\0'),
                       "unknown dtype \"F128\"");
  expect_entry_refused(R"({"dtype":"f32","shape":[1],"data_offsets":[0,4]})", std::string(4, '\0'),
                       "unknown dtype");  // names are case-sensitive
}

TEST(SafeTensorsRefuse, EndBeforeBegin) {
  expect_entry_refused(R"({"dtype":"F32","shape":[1],"data_offsets":[4,0]})", std::string(4, '\0'), "end < begin");
}

TEST(SafeTensorsRefuse, ElementCountOverflow) {
  // 2^32 * 2^32 wraps to 0 in 64 bits: without the check, 0 elements would "match" 0 bytes.
  expect_entry_refused(R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]})", "",
                       "element count overflow");
  expect_entry_refused(R"({"dtype":"F64","shape":[9223372036854775807],"data_offsets":[0,0]})", "",
                       "element count overflow");  // count fits, byte size does not
  expect_entry_refused(R"({"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,0]})", "",
                       "element count overflow");  // beyond int64
  expect_entry_refused(R"({"dtype":"F32","shape":[0,4294967296,4294967296],"data_offsets":[0,0]})", "",
                       "element count overflow");  // 0 elements, but its strides overflow
}

TEST(SafeTensorsRefuse, ByteSizeMismatch) {
  expect_entry_refused(R"({"dtype":"F32","shape":[2],"data_offsets":[0,4]})", std::string(4, '\0'),
                       "byte size mismatch");
}

TEST(SafeTensorsRefuse, HugeShapeIsRefusedBeforeAnyAllocation) {
  // 10^12 floats (4 TB): refused from the header alone, whatever the offsets say.
  expect_entry_refused(R"({"dtype":"F32","shape":[1000000000000],"data_offsets":[0,4]})", std::string(4, '\0'),
                       "byte size mismatch");
  expect_entry_refused(R"({"dtype":"F32","shape":[1000000000000],"data_offsets":[0,4000000000000]})",
                       std::string(4, '\0'), "out of range");
}

TEST(SafeTensorsRefuse, GapBetweenTensors) {
  const std::string header = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})";
  expect_refused(file_from(header, std::string(12, '\0')), "gap");
  // Nor may the first tensor start after 0.
  expect_entry_refused(R"({"dtype":"F32","shape":[1],"data_offsets":[4,8]})", std::string(8, '\0'), "gap");
}

TEST(SafeTensorsRefuse, OverlappingTensors) {
  const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  expect_refused(file_from(header, std::string(8, '\0')), "overlap");
  const std::string same = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                           R"("b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  expect_refused(file_from(same, std::string(8, '\0')), "overlap");
}

TEST(SafeTensorsRefuse, TrailingBytes) {
  expect_entry_refused(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})", std::string(5, '\0'),
                       "1 trailing bytes");
  expect_refused(file_from("{}", "x"), "trailing");
}

TEST(SafeTensorsRefuse, DataRunsOutOfRange) {
  expect_entry_refused(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})", std::string(7, '\0'),
                       "out of range");
}

TEST(SafeTensorsRefuse, MetadataNotStrings) {
  expect_refused(file_from(R"({"__metadata__":{"epoch":3}})"), "__metadata__ value for key 'epoch' is not a string");
  expect_refused(file_from(R"({"__metadata__":{"a":{"b":"c"}}})"), "is not a string");
  expect_refused(file_from(R"({"__metadata__":["a"]})"), "__metadata__ is not a JSON object");
}

TEST(SafeTensorsRefuse, BoolBytesOtherThanZeroOrOne) {
  const SafeTensorsFile f = SafeTensorsFile::parse(
      file_from(R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})", std::string("\x01\x00\x02", 3)), "b");
  EXPECT_EQ(f.bytes("m").size(), 3u);  // the raw layer gives the bytes as they are
  EXPECT_NE(error_of([&] { f.get("m"); }).find("not 0 or 1"), std::string::npos);
}

TEST(SafeTensorsRefuse, EveryTruncationOfAValidFile) {
  const std::string good = serialize_safetensors(sample_tensors(), {{"k", "v"}});
  ASSERT_NO_THROW(SafeTensorsFile::parse(good, "good"));
  for (size_t len = 0; len < good.size(); ++len)
    EXPECT_THROW(SafeTensorsFile::parse(good.substr(0, len), "cut"), std::runtime_error) << "length " << len;
}

TEST(SafeTensorsRefuse, RandomCorruptionIsRefusedOrReadSafely) {
  // Flip, overwrite, insert or delete random bytes of a valid file: the reader must either
  // refuse with std::runtime_error or read tensors whose sizes agree with the file.
  const std::string good = serialize_safetensors(sample_tensors(), {{"k", "v"}});
  std::mt19937_64 rng(1234);
  int accepted = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string bytes = good;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      const size_t pos = rng() % bytes.size();
      switch (rng() % 4) {
        case 0: bytes[pos] = static_cast<char>(bytes[pos] ^ (1 << (rng() % 8))); break;
        case 1: bytes[pos] = "0123456789[]{},:\"- "[rng() % 19]; break;
        case 2: bytes.insert(pos, 1, static_cast<char>(rng())); break;
        default: bytes.erase(pos, 1); break;
      }
    }
    try {
      const SafeTensorsFile f = SafeTensorsFile::parse(bytes, "fuzz");
      ++accepted;
      for (const std::string& name : f.names()) {
        const SafeTensorInfo& i = f.info(name);
        ASSERT_LE(8 + header_size(bytes) + i.end, bytes.size());
        try {
          const Tensor t = f.get(name);
          EXPECT_EQ(static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype()), i.end - i.begin);
        } catch (const std::runtime_error&) {  // unsupported dtype or bad bool bytes
        }
      }
    } catch (const std::runtime_error&) {
    }
  }
  EXPECT_GT(accepted, 0);  // some edits (e.g. in float data) leave a valid file
}

// ---- durable saving ---------------------------------------------------------------------------

TEST_F(SafeTensorsTempDir, SaveReplacesTheTargetAndLeavesNoTemporaryFile) {
  const std::string p = path("ckpt.safetensors");
  save_safetensors(p, {{"a", Tensor::ones({3})}});
  save_safetensors(p, {{"b", Tensor::zeros({2})}}, {{"step", "2"}});
  const SafeTensorsFile f = SafeTensorsFile::load(p);
  EXPECT_EQ(f.names(), std::vector<std::string>{"b"});
  EXPECT_EQ(f.metadata().at("step"), "2");
  EXPECT_EQ(listing(), std::vector<std::string>{"ckpt.safetensors"});
}

TEST_F(SafeTensorsTempDir, SaveWithARelativePath) {
  const fs::path old = fs::current_path();
  fs::current_path(dir_);
  EXPECT_NO_THROW(save_safetensors("rel.safetensors", {{"a", Tensor::ones({1})}}));
  fs::current_path(old);
  EXPECT_EQ(listing(), std::vector<std::string>{"rel.safetensors"});
}

TEST_F(SafeTensorsTempDir, FailedSaveOnBadArgumentsLeavesTargetUnchanged) {
  const std::string p = path("ckpt.safetensors");
  save_safetensors(p, {{"a", Tensor::ones({3})}});
  const std::string before = read_file(p);
  const std::string msg = error_of<std::invalid_argument>(
      [&] { save_safetensors(p, {{"x", Tensor::zeros({2})}, {"x", Tensor::zeros({2})}}); });
  EXPECT_EQ(msg.rfind(p, 0), 0u) << msg;
  EXPECT_NE(msg.find("duplicate"), std::string::npos) << msg;
  EXPECT_EQ(read_file(p), before);
  EXPECT_EQ(listing(), std::vector<std::string>{"ckpt.safetensors"});
}

TEST_F(SafeTensorsTempDir, FailedSaveIntoAMissingDirectoryCreatesNothing) {
  const std::string p = path("no/such/dir/ckpt.safetensors");
  const std::string msg = error_of([&] { save_safetensors(p, {{"a", Tensor::ones({1})}}); });
  EXPECT_EQ(msg.rfind(p + ": cannot save", 0), 0u) << msg;
  EXPECT_NE(msg.find("No such file or directory"), std::string::npos) << msg;
  EXPECT_TRUE(listing().empty());
}

TEST_F(SafeTensorsTempDir, FailedRenameRemovesTheTemporaryFile) {
  // The target is a non-empty directory: the temporary file is written, then the rename
  // fails (this happens even as root), and the temporary file must be cleaned up.
  fs::create_directory(dir_ / "ckpt");
  std::ofstream(dir_ / "ckpt" / "keep") << "x";
  const std::string msg = error_of([&] { save_safetensors(path("ckpt"), {{"a", Tensor::ones({1})}}); });
  EXPECT_NE(msg.find("rename"), std::string::npos) << msg;
  EXPECT_EQ(listing(), std::vector<std::string>{"ckpt"});
  EXPECT_EQ(read_file(dir_ / "ckpt" / "keep"), "x");
}

TEST_F(SafeTensorsTempDir, FailedWriteMidwayLeavesTheOldFileIntact) {
  // A file-size limit makes write() fail with EFBIG part way through the temporary file.
  const std::string p = path("ckpt.safetensors");
  save_safetensors(p, {{"a", Tensor::ones({3})}});
  const std::string before = read_file(p);
  const Tensor big = Tensor::ones({64 * 1024});  // 256 KiB

  rlimit old_limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  rlimit small = old_limit;
  small.rlim_cur = 4096;
  auto* old_handler = ::signal(SIGXFSZ, SIG_IGN);  // get EFBIG instead of being killed
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string msg;
  try {
    save_safetensors(p, {{"big", big}});
  } catch (const std::runtime_error& e) {
    msg = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  ::signal(SIGXFSZ, old_handler);

  EXPECT_EQ(msg.rfind(p + ": cannot save", 0), 0u) << msg;
  EXPECT_NE(msg.find("write"), std::string::npos) << msg;
  EXPECT_NE(msg.find("File too large"), std::string::npos) << msg;
  EXPECT_EQ(read_file(p), before);
  EXPECT_EQ(listing(), std::vector<std::string>{"ckpt.safetensors"});
}

TEST_F(SafeTensorsTempDir, FailedSaveIntoAReadOnlyDirectoryLeavesTheOldFileIntact) {
  const std::string p = path("ckpt.safetensors");
  save_safetensors(p, {{"a", Tensor::ones({3})}});
  const std::string before = read_file(p);
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
  if (::access(dir_.c_str(), W_OK) == 0) {  // root ignores permissions
    fs::permissions(dir_, fs::perms::owner_all);
    GTEST_SKIP() << "the directory stays writable for this user (root?)";
  }
  const std::string msg = error_of([&] { save_safetensors(p, {{"b", Tensor::zeros({2})}}); });
  fs::permissions(dir_, fs::perms::owner_all);
  EXPECT_NE(msg.find("Permission denied"), std::string::npos) << msg;
  EXPECT_EQ(read_file(p), before);
  EXPECT_EQ(listing(), std::vector<std::string>{"ckpt.safetensors"});
}
