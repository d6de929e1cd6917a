// Lists of node pairs and of nodes from text files (plexus/convert.hpp: read_node_pairs_text,
// read_node_list_text): `plexus predict --pairs` and `--nodes`, read with the converters' line
// reader (gzip, line numbers, bounded lines).
#include <string>
#include <string_view>
#include <vector>

#include "io/convert/text_reader.hpp"
#include "io/files/safe_files.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"

namespace plexus {

namespace {
// Each line of ids that is not blank or a comment: on_line(reader, its fields).
template <class OnLine>
void read_id_lines(const std::string& path, OnLine on_line) {
  if (path != text::TextReader::kStandardInput) io::require_regular_input(path, "text");
  text::TextReader in(path);
  std::string_view line;
  std::vector<std::string_view> f;
  while (in.next(line)) {
    if (text::is_comment_or_blank(line)) continue;
    text::split_fields(line, f);
    on_line(in, f);
  }
}
}  // namespace

NodePairList read_node_pairs_text(const std::string& path) {
  NodePairList p;
  read_id_lines(path, [&](text::TextReader& in, const std::vector<std::string_view>& f) {
    if (f.size() != 2) in.fail("not two node ids (\"u v\" a line)");
    p.u.push_back(text::parse_int(in, f[0], "node id"));
    p.v.push_back(text::parse_int(in, f[1], "node id"));
  });
  if (p.size() == 0) throw InputError(path, "holds no pair (\"u v\" a line)");
  return p;
}

std::vector<std::int64_t> read_node_list_text(const std::string& path) {
  std::vector<std::int64_t> ids;
  read_id_lines(path, [&](text::TextReader& in, const std::vector<std::string_view>& f) {
    if (f.size() != 1) in.fail("not one node id (an id a line)");
    ids.push_back(text::parse_int(in, f[0], "node id"));
  });
  if (ids.empty()) throw InputError(path, "holds no node id (an id a line)");
  return ids;
}

}  // namespace plexus
