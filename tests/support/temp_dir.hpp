#pragma once

#include <filesystem>
#include <string>

namespace sqllock::test {

// A new empty directory <system temp dir>/<prefix>-XXXXXX. It and everything in it are removed
// when the process that made it exits normally; a forked child leaving through _exit removes
// nothing, and a child never removes what its parent made.
std::filesystem::path make_temp_dir(const std::string& prefix);

}  // namespace sqllock::test
