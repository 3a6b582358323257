// A bench's figures by name, written as one JSON object when the bench is given --json=PATH
// (bench/run.sh collects them). Names are snake_case; ratios end in _ratio, rates say their
// unit (_gbs, _us, _s, _bytes).
#ifndef SLUICE_BENCH_JSON_OUT_H_
#define SLUICE_BENCH_JSON_OUT_H_

#include <fstream>
#include <string>

#include "nlohmann/json.hpp"

namespace sluice::bench {

class JsonOut {
 public:
  static JsonOut& Get() {
    static JsonOut* const out = new JsonOut();  // one per bench program, never freed
    return *out;
  }
  void Set(const std::string& name, double value) { figures_[name] = value; }
  // Writes the figures to `path` (nothing when empty); false if it cannot.
  bool Write(const std::string& path) const {
    if (path.empty()) return true;
    std::ofstream out(path);
    out << figures_.dump(2) << "\n";
    return out.good();
  }

 private:
  nlohmann::json figures_ = nlohmann::json::object();
};

}  // namespace sluice::bench

#endif  // SLUICE_BENCH_JSON_OUT_H_
