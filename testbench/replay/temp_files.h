#pragma once
// Files for the tests of the run and sweep tools: a temporary directory removed at the end, and
// whole files written and read.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace hcaemu::replay::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "hcareplay-tools-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline void write_file(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline bool exists(const std::string& path) { return std::filesystem::exists(path); }

// A gnuplot script draws `stem` both as PNG and as SVG.
inline void expect_png_and_svg(const std::string& gp, const std::string& stem) {
  EXPECT_NE(gp.find("set output '" + stem + ".png'\n"), std::string::npos) << stem;
  EXPECT_NE(gp.find("set output '" + stem + ".svg'\n"), std::string::npos) << stem;
}

}  // namespace hcaemu::replay::testing
