#include "sluice/analyzer/front_end.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/Verifier.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "nlohmann/json.hpp"

extern char** environ;

namespace sluice::analyzer {
namespace {

namespace fs = std::filesystem;

#ifndef SLUICE_CLANG
#define SLUICE_CLANG "clang"
#endif

// The most bytes of Clang's diagnostics an error carries.
constexpr size_t kMaxDiagnosticBytes = 4000;

// A command's flags from a compile_commands.json entry, without the compiler, the output, -c
// and the source itself.
struct CompileCommand {
  std::string directory;
  std::vector<std::string> flags;
};

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Splits a shell command line as compile_commands.json writers quote it (spaces, '' and ""
// quoting, backslash escapes).
std::vector<std::string> SplitCommand(const std::string& command) {
  std::vector<std::string> out;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else if (c == '\\' && quote == '"' && i + 1 < command.size()) {
        word += command[++i];
      } else {
        word += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < command.size()) {
      word += command[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) out.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) out.push_back(std::move(word));
  return out;
}

std::string Normal(const fs::path& path) {
  std::error_code ignored;
  fs::path absolute = fs::absolute(path, ignored);
  return absolute.lexically_normal().string();
}

absl::StatusOr<std::map<std::string, CompileCommand>> ReadCompileCommands(
    const std::string& path) {
  if (!fs::is_regular_file(path)) {
    return absl::NotFoundError(absl::StrFormat("%s: no such compile_commands.json", path));
  }
  nlohmann::json root = nlohmann::json::parse(ReadSmallFile(path), nullptr, false);
  if (root.is_discarded() || !root.is_array()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: not a compilation database (a JSON array of entries)", path));
  }
  std::map<std::string, CompileCommand> commands;
  for (size_t i = 0; i < root.size(); ++i) {
    const nlohmann::json& entry = root[i];
    if (!entry.is_object() || !entry.contains("directory") || !entry["directory"].is_string() ||
        !entry.contains("file") || !entry["file"].is_string()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: entry %d needs \"directory\" and \"file\" strings", path, i));
    }
    std::vector<std::string> argv;
    if (entry.contains("arguments") && entry["arguments"].is_array()) {
      for (const nlohmann::json& a : entry["arguments"]) {
        if (!a.is_string()) {
          return absl::InvalidArgumentError(
              absl::StrFormat("%s: entry %d has an argument that is not a string", path, i));
        }
        argv.push_back(a.get<std::string>());
      }
    } else if (entry.contains("command") && entry["command"].is_string()) {
      argv = SplitCommand(entry["command"].get<std::string>());
    } else {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: entry %d needs \"arguments\" or \"command\"", path, i));
    }
    CompileCommand command;
    command.directory = entry["directory"].get<std::string>();
    const std::string file = Normal(fs::path(command.directory) / entry["file"].get<std::string>());
    for (size_t a = 1; a < argv.size(); ++a) {
      const std::string& arg = argv[a];
      if (arg == "-o" || arg == "-MF" || arg == "-MT" || arg == "-MQ") {
        ++a;
        continue;
      }
      if (arg == "-c" || arg == "-S" || arg == "-MD" || arg == "-MMD" || arg == "-M" ||
          arg == "-MM" || absl::StartsWith(arg, "-o") || absl::StartsWith(arg, "-O") ||
          absl::StartsWith(arg, "-g") || absl::StartsWith(arg, "-W") || arg == "-pipe" ||
          Normal(fs::path(command.directory) / arg) == file) {
        continue;
      }
      command.flags.push_back(arg);
    }
    commands[file] = std::move(command);
  }
  return commands;
}

// Runs `argv` in `directory` with stdout and stderr to `log`; the exit status, or an error.
absl::StatusOr<int> Run(const std::vector<std::string>& argv, const std::string& directory,
                        const std::string& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  if (!directory.empty()) posix_spawn_file_actions_addchdir_np(&actions, directory.c_str());
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int error = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot run %s: %s", argv[0], std::strerror(error)));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return absl::InternalError("waitpid failed");
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

absl::StatusOr<std::unique_ptr<llvm::Module>> ParseIr(const std::string& path,
                                                      llvm::LLVMContext& context) {
  if (!fs::exists(path)) return absl::NotFoundError(absl::StrFormat("%s: no such file", path));
  if (fs::is_directory(path)) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: is a directory", path));
  }
  llvm::SMDiagnostic diagnostic;
  std::unique_ptr<llvm::Module> module = llvm::parseIRFile(path, diagnostic, context);
  if (module == nullptr) {
    std::string message;
    llvm::raw_string_ostream out(message);
    diagnostic.print(nullptr, out, /*ShowColors=*/false);
    out.flush();
    return absl::InvalidArgumentError(absl::StrFormat("%s: not LLVM IR or bitcode LLVM 14 reads: %s",
                                                      path, message));
  }
  return module;
}

// A work directory, removed with everything in it unless the caller named it.
class WorkDir {
 public:
  static absl::StatusOr<WorkDir> Make(const std::string& named) {
    WorkDir dir;
    if (!named.empty()) {
      std::error_code error;
      fs::create_directories(named, error);
      if (error) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s: cannot create the work directory: %s", named, error.message()));
      }
      dir.path_ = named;
      return dir;
    }
    std::string pattern = (fs::temp_directory_path() / "sluice-analyze-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      return absl::InternalError(
          absl::StrFormat("cannot make a temporary directory: %s", std::strerror(errno)));
    }
    dir.path_ = pattern;
    dir.remove_ = true;
    return dir;
  }
  WorkDir(WorkDir&& other) noexcept : path_(std::move(other.path_)), remove_(other.remove_) {
    other.remove_ = false;
  }
  ~WorkDir() {
    if (remove_) {
      std::error_code ignored;
      fs::remove_all(path_, ignored);
    }
  }
  const std::string& path() const { return path_; }

 private:
  WorkDir() = default;
  std::string path_;
  bool remove_ = false;
};

bool IsCxx(const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  return ext == ".cc" || ext == ".cpp" || ext == ".cxx" || ext == ".c++" || ext == ".C";
}

// A directory as InDirectories compares it: lexically normal, without a trailing '/'.
std::string NormalDirectory(const std::string& directory) {
  std::string out = Normal(directory);
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

// The directories `clang -v` says it searches for `#include <...>` in a C++ compile with no
// flags of the user's: its own headers, the C++ library's and the system's. None where it
// cannot be run or says nothing of them.
std::vector<std::string> DefaultSystemDirectories(const std::string& clang,
                                                  const std::string& work) {
  std::vector<std::string> argv = {clang, "-x", "c++", "-E", "-v", "/dev/null", "-o",
                                   "/dev/null"};
  if (!absl::EndsWith(clang, "++")) argv.insert(argv.begin() + 1, "--driver-mode=g++");
  const std::string log = Normal(fs::path(work) / "system-headers.log");
  std::vector<std::string> directories;
  absl::StatusOr<int> exit = Run(argv, "", log);
  if (!exit.ok() || *exit != 0) return directories;
  bool listing = false;
  for (absl::string_view line : absl::StrSplit(ReadSmallFile(log), '\n')) {
    if (absl::StartsWith(line, "#include <...> search starts here:")) {
      listing = true;
    } else if (absl::StartsWith(line, "End of search list.")) {
      break;
    } else if (listing && absl::StartsWith(line, " /")) {
      directories.push_back(NormalDirectory(std::string(absl::StripLeadingAsciiWhitespace(line))));
    }
  }
  return directories;
}

// The directories `flags` name with -isystem (as "-isystem DIR" or "-isystemDIR"), relative
// ones from `directory`.
void AddIsystemDirectories(const std::vector<std::string>& flags, const std::string& directory,
                           std::vector<std::string>* out) {
  for (size_t i = 0; i < flags.size(); ++i) {
    std::string named;
    if (flags[i] == "-isystem" && i + 1 < flags.size()) {
      named = flags[++i];
    } else if (absl::StartsWith(flags[i], "-isystem") && flags[i].size() > 8) {
      named = flags[i].substr(8);
    } else {
      continue;
    }
    const fs::path path(named);
    out->push_back(NormalDirectory(
        path.is_absolute() || directory.empty() ? named : (fs::path(directory) / path).string()));
  }
}

}  // namespace

bool InDirectories(const std::string& file, const std::vector<std::string>& directories) {
  if (file.empty() || file[0] != '/') return false;
  const std::string normal = fs::path(file).lexically_normal().string();
  for (const std::string& directory : directories) {
    if (normal.size() > directory.size() && absl::StartsWith(normal, directory) &&
        (directory == "/" || normal[directory.size()] == '/')) {
      return true;
    }
  }
  return false;
}

bool IsSource(const std::string& path) {
  return fs::path(path).extension() == ".c" || IsCxx(path);
}

absl::StatusOr<LoadedModule> LoadModule(const std::vector<std::string>& given,
                                        const FrontEndOptions& options,
                                        const std::function<void(const std::string&)>& progress) {
  std::map<std::string, CompileCommand> commands;
  if (!options.compile_commands.empty()) {
    absl::StatusOr<std::map<std::string, CompileCommand>> read =
        ReadCompileCommands(options.compile_commands);
    if (!read.ok()) return read.status();
    commands = *std::move(read);
  }
  std::vector<std::string> inputs = given;
  if (inputs.empty()) {
    for (const auto& [file, command] : commands) {
      if (IsSource(file)) inputs.push_back(file);
    }
  }
  if (inputs.empty()) {
    return absl::InvalidArgumentError("no input: give .c/.cc, .ll or .bc files, or "
                                      "--compile-commands listing sources");
  }
  absl::StatusOr<WorkDir> work = WorkDir::Make(options.work_dir);
  if (!work.ok()) return work.status();
  const std::string clang = options.clang.empty() ? SLUICE_CLANG : options.clang;

  LoadedModule loaded;
  loaded.system_header_directories = DefaultSystemDirectories(clang, work->path());
  AddIsystemDirectories(options.cflags, "", &loaded.system_header_directories);
  loaded.context = std::make_unique<llvm::LLVMContext>();
  std::string link_errors;
  loaded.context->setDiagnosticHandlerCallBack(
      [](const llvm::DiagnosticInfo& info, void* context) {
        if (info.getSeverity() != llvm::DS_Error) return;
        std::string message;
        llvm::raw_string_ostream out(message);
        llvm::DiagnosticPrinterRawOStream printer(out);
        info.print(printer);
        out.flush();
        static_cast<std::string*>(context)->append(message).append("\n");
      },
      &link_errors);
  size_t sources = 0;
  for (const std::string& input : inputs) sources += IsSource(input) ? 1 : 0;
  if (sources > 0 && progress) {
    progress(absl::StrFormat("compiling %d source%s with %s", sources, sources == 1 ? "" : "s",
                             clang));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& input = inputs[i];
    std::string ir_path = input;
    const std::string ext = fs::path(input).extension().string();
    if (IsSource(input)) {
      if (!fs::is_regular_file(input)) {
        std::error_code unknown;
        return fs::is_directory(input, unknown)
                   ? absl::InvalidArgumentError(
                         absl::StrFormat("%s: a directory, not a source file", input))
                   : absl::NotFoundError(absl::StrFormat("%s: no such source file", input));
      }
      ir_path = (fs::path(work->path()) /
                 absl::StrFormat("%d-%s.bc", i, fs::path(input).stem().string()))
                    .string();
      const std::string log = ir_path + ".log";
      std::vector<std::string> argv = {clang, "-O0", "-g", "-emit-llvm", "-c",
                                       "-fno-discard-value-names", "-Xclang",
                                       "-disable-O0-optnone"};
      // C++ through the same compiler as C++'s driver (clang++), whatever the compiler's file
      // is called: "clang-14" has no "clang-14++" beside it.
      if (IsCxx(input) && !absl::EndsWith(clang, "++")) argv.push_back("--driver-mode=g++");
      std::string directory;
      auto it = commands.find(Normal(input));
      if (it != commands.end()) {
        directory = it->second.directory;
        argv.insert(argv.end(), it->second.flags.begin(), it->second.flags.end());
        AddIsystemDirectories(it->second.flags, directory, &loaded.system_header_directories);
      }
      argv.insert(argv.end(), options.cflags.begin(), options.cflags.end());
      argv.push_back("-o");
      argv.push_back(Normal(ir_path));
      argv.push_back(directory.empty() ? input : Normal(input));
      absl::StatusOr<int> exit = Run(argv, directory, Normal(log));
      if (!exit.ok()) return exit.status();
      if (*exit != 0) {
        std::string diagnostics = ReadSmallFile(log);
        if (diagnostics.size() > kMaxDiagnosticBytes) {
          diagnostics.resize(kMaxDiagnosticBytes);
          diagnostics += "...";
        }
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: clang failed (exit %d):\n%s", input, *exit, diagnostics));
      }
    } else if (ext != ".ll" && ext != ".bc") {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: not an input the analyzer reads (.c .cc .cpp .cxx sources, .ll or .bc)", input));
    }
    absl::StatusOr<std::unique_ptr<llvm::Module>> module = ParseIr(ir_path, *loaded.context);
    if (!module.ok()) return module.status();
    if (loaded.module == nullptr) {
      loaded.module = *std::move(module);
      continue;
    }
    link_errors.clear();
    if (llvm::Linker::linkModules(*loaded.module, *std::move(module))) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: cannot link it with the inputs before it: %s", input,
          link_errors.empty() ? "the linker refused" : link_errors));
    }
  }
  std::string broken;
  llvm::raw_string_ostream out(broken);
  if (llvm::verifyModule(*loaded.module, &out)) {
    out.flush();
    return absl::InvalidArgumentError(absl::StrFormat("the linked module is not valid IR: %s",
                                                      broken.substr(0, kMaxDiagnosticBytes)));
  }
  // Each source's compile command may name the same ones.
  std::vector<std::string>& system = loaded.system_header_directories;
  std::sort(system.begin(), system.end());
  system.erase(std::unique(system.begin(), system.end()), system.end());
  return loaded;
}

}  // namespace sluice::analyzer
