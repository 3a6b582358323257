// The analyzer's front end: one LLVM module from .ll/.bc files and C/C++ sources (compiled by
// Clang at -O0 -g), linked with LLVM's linker and verified.
#ifndef SLUICE_ANALYZER_FRONT_END_H_
#define SLUICE_ANALYZER_FRONT_END_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "sluice/analyzer/analyzer.h"

namespace sluice::analyzer {

struct LoadedModule {
  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> module;
  // Where the system's headers are: the directories Clang searches for `#include <...>` with
  // no flags of the user's (asked once, `clang -v`; none where Clang cannot be run), and those
  // the flags given name with -isystem, each lexically normal.
  std::vector<std::string> system_header_directories;
};

// True for the names the front end compiles (.c .cc .cpp .cxx .c++ .C).
bool IsSource(const std::string& path);

// Whether `file`, an absolute path (as the debug info names a header), lies in one of
// `directories` (lexically normal, as LoadedModule's).
bool InDirectories(const std::string& file, const std::vector<std::string>& directories);

// `inputs` may be empty when options.compile_commands is set: then every source it lists is
// compiled. Errors name the file: NotFound, or InvalidArgument with Clang's diagnostics or
// LLVM's parse, link or verify message.
absl::StatusOr<LoadedModule> LoadModule(const std::vector<std::string>& inputs,
                                        const FrontEndOptions& options,
                                        const std::function<void(const std::string&)>& progress);

}  // namespace sluice::analyzer

#endif  // SLUICE_ANALYZER_FRONT_END_H_
