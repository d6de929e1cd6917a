// A list of node pairs from a text file (plexus/convert.hpp: read_node_pairs_text): `plexus
// predict --pairs`, read with the converters' line reader (gzip, line numbers, bounded lines).
#include <string>
#include <string_view>
#include <vector>

#include "io/convert/text_reader.hpp"
#include "io/files/safe_files.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"

namespace plexus {

NodePairList read_node_pairs_text(const std::string& path) {
  if (path != text::TextReader::kStandardInput) io::require_regular_input(path, "text");
  text::TextReader in(path);
  NodePairList p;
  std::string_view line;
  std::vector<std::string_view> f;
  while (in.next(line)) {
    if (text::is_comment_or_blank(line)) continue;
    text::split_fields(line, f);
    if (f.size() != 2) in.fail("not two node ids (\"u v\" a line)");
    p.u.push_back(text::parse_int(in, f[0], "node id"));
    p.v.push_back(text::parse_int(in, f[1], "node id"));
  }
  if (p.size() == 0) throw InputError(in.path(), "holds no pair (\"u v\" a line)");
  return p;
}

}  // namespace plexus
