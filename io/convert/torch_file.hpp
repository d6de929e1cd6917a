#pragma once
// The object a `torch.save` file holds, read without Python and without running anything: the
// pickle inside is parsed by the safe reader (io/convert/pickle.hpp), so only plain data and
// numpy arrays come out — OGB's link splits (split/<name>/{train,valid,test}.pt) are dicts of
// numpy arrays. Both of torch's containers are read:
//   - the zip archive of torch >= 1.6: the entry <archive>/data.pkl, stored or deflated, its
//     CRC-32 checked (zip64 sizes and offsets included);
//   - the legacy stream: the pickles of the magic number, the protocol version (1001) and the
//     system info (little-endian), then the object, then its list of storage keys, which must
//     be empty (a file of torch tensors is refused: the safe reader knows no tensor).
// A file that is neither, truncated, or whose claims (sizes, offsets, checksum) disagree with
// its bytes is InputError(path, ...).
#include <string>

#include "io/convert/pickle.hpp"

namespace plexus {

pickle::Document read_torch_save(const std::string& path);

}  // namespace plexus
