#pragma once
// A small, safe reader for Python pickles (protocols 0-2, plus the protocol 3/4 opcodes that
// carry plain data), as written by Python 2's cPickle for the Planetoid datasets and by
// torch.save for OGB's link splits (dicts of numpy arrays; io/convert/torch_file.hpp).
//
// Safety: the reader is a stack machine that only *builds a value tree*; it never executes
// anything. GLOBAL may only name a fixed set of known classes and functions (numpy arrays and
// dtypes, scipy csr_matrix, collections.defaultdict, copy_reg._reconstructor, a few builtins);
// anything else is rejected. REDUCE / NEWOBJ / BUILD on a known global record the call and its
// state as data. Every length read from the file is checked against the bytes that remain, so a
// malformed or truncated file throws InputError(path, ...) and never crashes or allocates
// without bound (memory use is O(file size)).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace plexus::pickle {

// The globals the reader accepts.
enum class Global {
  NdArray,        // numpy.ndarray
  Dtype,          // numpy.dtype
  Reconstruct,    // numpy.core.multiarray._reconstruct
  CsrMatrix,      // scipy.sparse.csr_matrix (modules scipy.sparse, scipy.sparse.csr, scipy.sparse._csr)
  DefaultDict,    // collections.defaultdict
  Reconstructor,  // copy_reg._reconstructor / copyreg._reconstructor
  BuiltinList,    // __builtin__.list / builtins.list
  BuiltinDict,    // dict
  BuiltinTuple,   // tuple
  BuiltinObject,  // object
  CodecsEncode,   // _codecs.encode(str, 'latin1'): how protocol 2 writes Python 3 bytes (torch.save)
};

struct Value;
using Ref = const Value*;

enum class Kind { None, Bool, Int, Float, Str, Bytes, Tuple, List, Dict, GlobalRef, Object };

// One node of the value tree. Nodes are owned by their Document; pointers stay valid for the
// Document's lifetime. (Lists and dicts may be mutated into cycles by a hostile pickle: nothing
// here recurses over a tree without a depth bound.)
struct Value {
  Kind kind = Kind::None;
  bool b = false;                              // Bool
  std::int64_t i = 0;                          // Int
  double f = 0.0;                              // Float
  std::string s;                               // Str (UTF-8), Bytes (raw), GlobalRef: "module.name"
  std::vector<Value*> items;                   // Tuple, List
  std::vector<std::pair<Value*, Value*>> dict;  // Dict, in insertion order (later keys override)
  Global global = Global::BuiltinObject;       // GlobalRef; Object: its class (or the function)
  Value* args = nullptr;                       // Object: constructor / function arguments (a tuple)
  Value* state = nullptr;                      // Object: BUILD state (nullptr if none)

  bool is_int() const { return kind == Kind::Int || kind == Kind::Bool; }
  bool is_string_like() const { return kind == Kind::Str || kind == Kind::Bytes; }
  // Dict lookup by string key (last match wins, as in Python); nullptr if absent or not a dict.
  Ref get(std::string_view key) const;
};

// A parsed pickle: its root value and the arena that owns every node.
class Document {
 public:
  Ref root() const { return root_; }
  const std::string& where() const { return where_; }
  std::size_t size() const { return arena_.size(); }

 private:
  friend class Parser;
  std::vector<std::unique_ptr<Value>> arena_;
  Value* root_ = nullptr;
  std::string where_;
};

// Parses `data` (the bytes of one pickle); errors name `where`.
Document parse(std::string_view data, const std::string& where);
// Parses the pickle that starts at data[pos] and sets pos just past its STOP: for files that
// hold several pickles one after another (torch.save's legacy format).
Document parse_next(std::string_view data, std::size_t& pos, const std::string& where);
// Reads and parses the file at `path` (InputError(path, ...) if it cannot be opened).
Document parse_file(const std::string& path);

// ---- converters from the value tree ---------------------------------------------------------
// Each takes `where` for its error messages.

// A dense numpy array converted to C order and to the element type T.
template <typename T>
struct Array {
  std::vector<std::int64_t> shape;
  std::vector<T> data;
  std::int64_t rows() const { return shape.empty() ? 1 : shape[0]; }
  std::int64_t cols() const { return shape.size() < 2 ? 1 : shape[1]; }
};

// numpy.ndarray of dtype <f4, <f8, ints (i1/i2/i4/i8, u1/u2/u4), bool (either byte order,
// C or Fortran order) as float64 / int64. Integer arrays reject float dtypes.
Array<double> to_float_array(Ref v, const std::string& where);
Array<std::int64_t> to_int_array(Ref v, const std::string& where);

// scipy.sparse.csr_matrix, checked: indptr monotone from 0 to nnz, indices in [0, cols).
struct Csr {
  std::int64_t rows = 0, cols = 0;
  std::vector<std::int64_t> indptr, indices;
  std::vector<double> data;
};
Csr to_csr(Ref v, const std::string& where);

// dict (or defaultdict) int -> list/tuple of int, in insertion order.
std::vector<std::pair<std::int64_t, std::vector<std::int64_t>>> to_int_list_dict(Ref v, const std::string& where);

// Human-readable summary of a value (bounded depth and length), for error messages and debugging.
std::string describe(Ref v, int depth = 2);

}  // namespace plexus::pickle
