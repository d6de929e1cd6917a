// Safe pickle reader: see io/convert/pickle.hpp.
#include "io/convert/pickle.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "io/files/safe_files.hpp"
#include "plexus/error.hpp"

namespace plexus::pickle {

Ref Value::get(std::string_view key) const {
  if (kind != Kind::Dict) return nullptr;
  for (auto it = dict.rbegin(); it != dict.rend(); ++it) {
    const Value* k = it->first;
    if (k->is_string_like() && k->s == key) return it->second;
  }
  return nullptr;
}

namespace {

// Resolves GLOBAL module/name to a known global; false if not on the allow-list.
bool resolve_global(std::string_view module, std::string_view name, Global& out) {
  const bool builtins = module == "__builtin__" || module == "builtins";
  if ((module == "numpy" && name == "ndarray")) {
    out = Global::NdArray;
  } else if (module == "numpy" && name == "dtype") {
    out = Global::Dtype;
  } else if ((module == "numpy.core.multiarray" || module == "numpy._core.multiarray") && name == "_reconstruct") {
    out = Global::Reconstruct;
  } else if ((module == "scipy.sparse" || module == "scipy.sparse.csr" || module == "scipy.sparse._csr") &&
             name == "csr_matrix") {
    out = Global::CsrMatrix;
  } else if (module == "collections" && name == "defaultdict") {
    out = Global::DefaultDict;
  } else if ((module == "copy_reg" || module == "copyreg") && name == "_reconstructor") {
    out = Global::Reconstructor;
  } else if (builtins && name == "list") {
    out = Global::BuiltinList;
  } else if (builtins && name == "dict") {
    out = Global::BuiltinDict;
  } else if (builtins && name == "tuple") {
    out = Global::BuiltinTuple;
  } else if (builtins && name == "object") {
    out = Global::BuiltinObject;
  } else if (module == "_codecs" && name == "encode") {
    out = Global::CodecsEncode;
  } else {
    return false;
  }
  return true;
}

bool is_class(Global g) {
  return g != Global::Reconstruct && g != Global::Reconstructor && g != Global::CodecsEncode;
}

// The bytes of a UTF-8 string whose code points are all below 256 (Python's str.encode('latin1')),
// false for a code point above 255 or a malformed sequence.
bool latin1_bytes(std::string_view utf8, std::string& out) {
  out.clear();
  out.reserve(utf8.size());
  for (std::size_t k = 0; k < utf8.size(); ++k) {
    const auto c = static_cast<unsigned char>(utf8[k]);
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if ((c == 0xC2 || c == 0xC3) && k + 1 < utf8.size() &&
               (static_cast<unsigned char>(utf8[k + 1]) & 0xC0) == 0x80) {
      out += static_cast<char>(((c & 0x03) << 6) | (static_cast<unsigned char>(utf8[k + 1]) & 0x3F));
      ++k;
    } else {
      return false;
    }
  }
  return true;
}

std::string printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 64)) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    }
  }
  if (s.size() > 64) out += "...";
  return out;
}

}  // namespace

class Parser {
 public:
  Parser(std::string_view data, const std::string& where, Document& doc, std::size_t start = 0)
      : data_(data), doc_(doc), pos_(start) {
    doc_.where_ = where;
  }
  std::size_t position() const { return pos_; }

  void run() {
    while (true) {
      if (pos_ >= data_.size()) fail_at(data_.size(), "truncated pickle: ended before the STOP opcode");
      op_pos_ = pos_;
      const auto op = static_cast<unsigned char>(data_[pos_++]);
      if (op == '.') {  // STOP
        if (!marks_.empty()) fail("STOP with an unclosed MARK");
        if (stack_.size() != 1) fail("STOP with " + std::to_string(stack_.size()) + " values on the stack (expected 1)");
        doc_.root_ = stack_.back();
        return;
      }
      step(op);
    }
  }

 private:
  [[noreturn]] void fail_at(std::size_t offset, const std::string& what) const {
    throw InputError(doc_.where_, what + " (at byte " + std::to_string(offset) + ")");
  }
  [[noreturn]] void fail(const std::string& what) const { fail_at(op_pos_, what); }

  // ---- raw reads, each checked against what remains ----
  void need(std::uint64_t n, const char* what) const {
    if (n > data_.size() - pos_) {
      fail("truncated pickle: " + std::string(what) + " needs " + std::to_string(n) + " bytes, " +
           std::to_string(data_.size() - pos_) + " left");
    }
  }
  std::uint64_t le(int nbytes, const char* what) {
    need(static_cast<std::uint64_t>(nbytes), what);
    std::uint64_t v = 0;
    for (int k = 0; k < nbytes; ++k) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(data_[pos_ + k])) << (8 * k);
    pos_ += static_cast<std::size_t>(nbytes);
    return v;
  }
  std::string_view take(std::uint64_t n, const char* what) {
    need(n, what);
    std::string_view s = data_.substr(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return s;
  }
  std::string_view line(const char* what) {
    const std::size_t nl = data_.find('\n', pos_);
    if (nl == std::string_view::npos) fail("truncated pickle: " + std::string(what) + " has no terminating newline");
    std::string_view s = data_.substr(pos_, nl - pos_);
    pos_ = nl + 1;
    if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
    return s;
  }
  std::int64_t parse_decimal(std::string_view s, const char* what) const {
    if (!s.empty() && s.back() == 'L') s.remove_suffix(1);  // protocol-0 longs: "123L"
    if (!s.empty() && s.front() == '+') s.remove_prefix(1);
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || s.empty()) {
      fail(std::string("bad ") + what + " value '" + printable(s) + "'");
    }
    return v;
  }

  // ---- the value stack ----
  Value* make(Kind k) {
    doc_.arena_.push_back(std::make_unique<Value>());
    doc_.arena_.back()->kind = k;
    return doc_.arena_.back().get();
  }
  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  void push(Value* v) { stack_.push_back(v); }
  Value* pop(const char* op) {
    if (stack_.size() <= floor()) fail(std::string("stack underflow in ") + op);
    Value* v = stack_.back();
    stack_.pop_back();
    return v;
  }
  Value* top(const char* op) {
    if (stack_.size() <= floor()) fail(std::string("stack underflow in ") + op);
    return stack_.back();
  }
  std::vector<Value*> pop_mark(const char* op) {
    if (marks_.empty()) fail(std::string(op) + " without a MARK");
    const std::size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Value*> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  Value* tuple_of(std::vector<Value*> items) {
    Value* t = make(Kind::Tuple);
    t->items = std::move(items);
    return t;
  }
  void memo_put(std::uint64_t key) {
    Value* v = top("PUT");
    memo_[key] = v;
  }
  void memo_get(std::uint64_t key) {
    const auto it = memo_.find(key);
    if (it == memo_.end()) fail("memo key " + std::to_string(key) + " is not defined");
    push(it->second);
  }
  void push_int(std::int64_t v) {
    Value* x = make(Kind::Int);
    x->i = v;
    push(x);
  }
  void push_bool(bool v) {
    Value* x = make(Kind::Bool);
    x->b = v;
    x->i = v ? 1 : 0;
    push(x);
  }
  void push_string(Kind k, std::string_view s) {
    Value* x = make(k);
    x->s.assign(s.data(), s.size());
    push(x);
  }
  // Little-endian two's-complement integer of n bytes (LONG1 / LONG4), must fit in int64.
  void push_long(std::uint64_t n) {
    const std::string_view b = take(n, "LONG");
    if (n == 0) return push_int(0);
    const bool neg = (static_cast<unsigned char>(b[n - 1]) & 0x80) != 0;
    const unsigned char ext = neg ? 0xff : 0x00;
    for (std::uint64_t k = 8; k < n; ++k) {
      if (static_cast<unsigned char>(b[k]) != ext) fail("integer does not fit in 64 bits");
    }
    std::uint64_t u = neg ? ~std::uint64_t{0} : 0;
    for (std::uint64_t k = 0; k < std::min<std::uint64_t>(n, 8); ++k) {
      u &= ~(std::uint64_t{0xff} << (8 * k));
      u |= static_cast<std::uint64_t>(static_cast<unsigned char>(b[k])) << (8 * k);
    }
    if (n > 8 && ((u >> 63) != 0) != neg) fail("integer does not fit in 64 bits");
    push_int(static_cast<std::int64_t>(u));
  }

  void append_to(Value* target, std::vector<Value*> items, const char* op) {
    if (target->kind != Kind::List) fail(std::string(op) + " on a non-list (" + describe(target, 0) + ")");
    target->items.insert(target->items.end(), items.begin(), items.end());
  }
  void setitems_on(Value* target, const std::vector<Value*>& kv, const char* op) {
    if (target->kind != Kind::Dict) fail(std::string(op) + " on a non-dict (" + describe(target, 0) + ")");
    if (kv.size() % 2 != 0) fail(std::string(op) + " with an odd number of items");
    for (std::size_t k = 0; k < kv.size(); k += 2) {
      const Value* key = kv[k];
      if (key->kind != Kind::None && key->kind != Kind::Bool && key->kind != Kind::Int && key->kind != Kind::Float &&
          key->kind != Kind::Str && key->kind != Kind::Bytes && key->kind != Kind::Tuple) {
        fail(std::string(op) + ": unhashable dict key (" + describe(key, 0) + ")");
      }
      target->dict.emplace_back(kv[k], kv[k + 1]);
    }
  }

  // REDUCE: callable(*args) for the allow-listed callables, recorded as data.
  Value* reduce(Value* callable, Value* args) {
    if (callable->kind != Kind::GlobalRef) fail("REDUCE on a non-global callable (" + describe(callable, 0) + ")");
    if (args->kind != Kind::Tuple) fail("REDUCE arguments are not a tuple");
    const auto& a = args->items;
    switch (callable->global) {
      case Global::Reconstruct: {  // numpy.core.multiarray._reconstruct(ndarray, shape, typecode)
        if (a.size() != 3 || a[0]->kind != Kind::GlobalRef || a[0]->global != Global::NdArray) {
          fail("unsupported numpy _reconstruct arguments");
        }
        Value* o = make(Kind::Object);
        o->global = Global::NdArray;
        o->args = args;
        return o;
      }
      case Global::Reconstructor: {  // copy_reg._reconstructor(cls, base, state) = base.__new__(cls, state)
        if (a.size() != 3 || a[0]->kind != Kind::GlobalRef || !is_class(a[0]->global) || a[1]->kind != Kind::GlobalRef ||
            a[1]->global != Global::BuiltinObject || a[2]->kind != Kind::None) {
          fail("unsupported copy_reg._reconstructor arguments");
        }
        return new_object(a[0]->global, tuple_of({}));
      }
      case Global::CodecsEncode: {  // _codecs.encode(text, 'latin1') -> bytes
        if (a.size() != 2 || a[0]->kind != Kind::Str || !a[1]->is_string_like() ||
            (a[1]->s != "latin1" && a[1]->s != "latin-1")) {
          fail("unsupported _codecs.encode arguments (only a str in 'latin1')");
        }
        Value* o = make(Kind::Bytes);
        if (!latin1_bytes(a[0]->s, o->s)) fail("_codecs.encode: a character outside latin1");
        return o;
      }
      case Global::DefaultDict:
        if (a.size() > 1) fail("unsupported defaultdict arguments");
        return make(Kind::Dict);
      case Global::BuiltinList:
      case Global::BuiltinDict:
      case Global::BuiltinTuple:
        // Only the empty constructors: copying a sequence argument would let a small file
        // allocate quadratically.
        if (!a.empty()) fail("unsupported arguments to a builtin constructor");
        return new_object(callable->global, args);
      case Global::NdArray:
      case Global::Dtype:
      case Global::CsrMatrix:
      case Global::BuiltinObject: {
        Value* o = make(Kind::Object);
        o->global = callable->global;
        o->args = args;
        return o;
      }
    }
    fail("unsupported REDUCE");
  }
  // NEWOBJ / object creation: cls.__new__(cls, *args).
  Value* new_object(Global cls, Value* args) {
    switch (cls) {
      case Global::BuiltinList:
        return make(Kind::List);
      case Global::BuiltinDict:
      case Global::DefaultDict:
        return make(Kind::Dict);
      case Global::BuiltinTuple:
        return make(Kind::Tuple);
      case Global::Reconstruct:
      case Global::Reconstructor:
      case Global::CodecsEncode:
        fail("NEWOBJ on a function");
      default: {
        Value* o = make(Kind::Object);
        o->global = cls;
        o->args = args;
        return o;
      }
    }
    fail("unsupported NEWOBJ");
  }

  void step(unsigned char op) {
    switch (op) {
      case 0x80: {  // PROTO
        const auto v = le(1, "PROTO");
        if (v > 5) fail("unsupported pickle protocol " + std::to_string(v));
        return;
      }
      case 0x95:  // FRAME (protocol 4): an 8-byte length hint; the framed opcodes follow inline
        le(8, "FRAME");
        return;
      case '(':
        marks_.push_back(stack_.size());
        return;
      case '0':  // POP
        if (stack_.size() > floor()) {
          stack_.pop_back();
        } else {
          pop_mark("POP");
        }
        return;
      case '1':  // POP_MARK
        pop_mark("POP_MARK");
        return;
      case '2':  // DUP
        push(top("DUP"));
        return;
      case 'N':
        push(make(Kind::None));
        return;
      case 0x88:
        push_bool(true);
        return;
      case 0x89:
        push_bool(false);
        return;
      case 'I': {  // INT (text); "00"/"01" are False/True
        const std::string_view s = line("INT");
        if (s == "00" || s == "01") return push_bool(s == "01");
        return push_int(parse_decimal(s, "INT"));
      }
      case 'L':
        return push_int(parse_decimal(line("LONG"), "LONG"));
      case 'J':
        return push_int(static_cast<std::int32_t>(static_cast<std::uint32_t>(le(4, "BININT"))));
      case 'K':
        return push_int(static_cast<std::int64_t>(le(1, "BININT1")));
      case 'M':
        return push_int(static_cast<std::int64_t>(le(2, "BININT2")));
      case 0x8a:
        return push_long(le(1, "LONG1"));
      case 0x8b: {
        const auto n = static_cast<std::int32_t>(static_cast<std::uint32_t>(le(4, "LONG4")));
        if (n < 0) fail("negative LONG4 length");
        return push_long(static_cast<std::uint64_t>(n));
      }
      case 'F': {
        const std::string s(line("FLOAT"));
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size()) fail("bad FLOAT value '" + printable(s) + "'");
        Value* x = make(Kind::Float);
        x->f = v;
        return push(x);
      }
      case 'G': {  // BINFLOAT: big-endian IEEE double
        need(8, "BINFLOAT");
        std::uint64_t u = 0;
        for (int k = 0; k < 8; ++k) u = (u << 8) | static_cast<unsigned char>(data_[pos_ + k]);
        pos_ += 8;
        Value* x = make(Kind::Float);
        x->f = std::bit_cast<double>(u);
        return push(x);
      }
      case 'T': {  // BINSTRING (Python 2 str): signed 4-byte length
        const auto n = static_cast<std::int32_t>(static_cast<std::uint32_t>(le(4, "BINSTRING")));
        if (n < 0) fail("negative BINSTRING length");
        return push_string(Kind::Bytes, take(static_cast<std::uint64_t>(n), "BINSTRING"));
      }
      case 'U':
        return push_string(Kind::Bytes, take(le(1, "SHORT_BINSTRING"), "SHORT_BINSTRING"));
      case 'B':
        return push_string(Kind::Bytes, take(le(4, "BINBYTES"), "BINBYTES"));
      case 'C':
        return push_string(Kind::Bytes, take(le(1, "SHORT_BINBYTES"), "SHORT_BINBYTES"));
      case 0x8e:
        return push_string(Kind::Bytes, take(le(8, "BINBYTES8"), "BINBYTES8"));
      case 'X':
        return push_string(Kind::Str, take(le(4, "BINUNICODE"), "BINUNICODE"));
      case 0x8c:
        return push_string(Kind::Str, take(le(1, "SHORT_BINUNICODE"), "SHORT_BINUNICODE"));
      case 0x8d:
        return push_string(Kind::Str, take(le(8, "BINUNICODE8"), "BINUNICODE8"));
      case ')':
        return push(tuple_of({}));
      case 't':
        return push(tuple_of(pop_mark("TUPLE")));
      case 0x85:
      case 0x86:
      case 0x87: {
        const int n = op - 0x84;
        if (stack_.size() < floor() + static_cast<std::size_t>(n)) fail("stack underflow in TUPLE" + std::to_string(n));
        std::vector<Value*> items(stack_.end() - n, stack_.end());
        stack_.resize(stack_.size() - static_cast<std::size_t>(n));
        return push(tuple_of(std::move(items)));
      }
      case ']':
        return push(make(Kind::List));
      case 'l': {
        Value* l = make(Kind::List);
        l->items = pop_mark("LIST");
        return push(l);
      }
      case 'a': {
        Value* v = pop("APPEND");
        return append_to(top("APPEND"), {v}, "APPEND");
      }
      case 'e': {
        std::vector<Value*> items = pop_mark("APPENDS");
        return append_to(top("APPENDS"), std::move(items), "APPENDS");
      }
      case '}':
        return push(make(Kind::Dict));
      case 'd': {
        Value* d = make(Kind::Dict);
        setitems_on(d, pop_mark("DICT"), "DICT");
        return push(d);
      }
      case 's': {
        Value* v = pop("SETITEM");
        Value* k = pop("SETITEM");
        return setitems_on(top("SETITEM"), {k, v}, "SETITEM");
      }
      case 'u': {
        const std::vector<Value*> kv = pop_mark("SETITEMS");
        return setitems_on(top("SETITEMS"), kv, "SETITEMS");
      }
      case 'g': {
        const std::int64_t k = parse_decimal(line("GET"), "GET");
        if (k < 0) fail("negative memo key");
        return memo_get(static_cast<std::uint64_t>(k));
      }
      case 'h':
        return memo_get(le(1, "BINGET"));
      case 'j':
        return memo_get(le(4, "LONG_BINGET"));
      case 'p': {
        const std::int64_t k = parse_decimal(line("PUT"), "PUT");
        if (k < 0) fail("negative memo key");
        return memo_put(static_cast<std::uint64_t>(k));
      }
      case 'q':
        return memo_put(le(1, "BINPUT"));
      case 'r':
        return memo_put(le(4, "LONG_BINPUT"));
      case 0x94:  // MEMOIZE
        return memo_put(memo_.size());
      case 'c': {
        const std::string_view module = line("GLOBAL");
        const std::string_view name = line("GLOBAL");
        return push_global(module, name);
      }
      case 0x93: {  // STACK_GLOBAL
        Value* name = pop("STACK_GLOBAL");
        Value* module = pop("STACK_GLOBAL");
        if (!name->is_string_like() || !module->is_string_like()) fail("STACK_GLOBAL needs two strings");
        return push_global(module->s, name->s);
      }
      case 'R': {
        Value* args = pop("REDUCE");
        Value* callable = pop("REDUCE");
        return push(reduce(callable, args));
      }
      case 0x81: {  // NEWOBJ
        Value* args = pop("NEWOBJ");
        Value* cls = pop("NEWOBJ");
        if (cls->kind != Kind::GlobalRef) fail("NEWOBJ on a non-class (" + describe(cls, 0) + ")");
        if (args->kind != Kind::Tuple) fail("NEWOBJ arguments are not a tuple");
        return push(new_object(cls->global, args));
      }
      case 'b': {  // BUILD: obj.__setstate__(state), recorded
        Value* state = pop("BUILD");
        Value* obj = top("BUILD");
        if (obj->kind != Kind::Object) fail("BUILD on a value that is not an object (" + describe(obj, 0) + ")");
        if (obj->state != nullptr) fail("BUILD applied twice to one object");
        obj->state = state;
        return;
      }
      default: {
        static const char* hex = "0123456789abcdef";
        std::string code = "0x";
        code += hex[op >> 4];
        code += hex[op & 15];
        if (op >= 0x20 && op < 0x7f) code += std::string(" '") + static_cast<char>(op) + "'";
        fail("unsupported or invalid pickle opcode " + code);
      }
    }
  }

  void push_global(std::string_view module, std::string_view name) {
    Global g{};
    if (!resolve_global(module, name, g)) {
      fail("pickle refers to '" + printable(module) + "." + printable(name) +
           "', which is not an allowed class (only numpy arrays, scipy csr_matrix, defaultdict and builtins)");
    }
    Value* x = make(Kind::GlobalRef);
    x->global = g;
    x->s = std::string(module) + "." + std::string(name);
    push(x);
  }

  std::string_view data_;
  Document& doc_;
  std::size_t pos_ = 0, op_pos_ = 0;
  std::vector<Value*> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint64_t, Value*> memo_;
};

Document parse(std::string_view data, const std::string& where) {
  Document doc;
  Parser p(data, where, doc);
  p.run();
  return doc;
}

Document parse_next(std::string_view data, std::size_t& pos, const std::string& where) {
  Document doc;
  Parser p(data, where, doc, pos);
  p.run();
  pos = p.position();
  return doc;
}

Document parse_file(const std::string& path) { return parse(io::read_whole_input(path, "a pickle"), path); }

// ---- converters ----------------------------------------------------------------------------

// '=' and '|' byte orders mean native; the element loader treats them as little-endian.
static_assert(std::endian::native == std::endian::little, "the pickle reader assumes a little-endian host");

namespace {

[[noreturn]] void bad(const std::string& where, const std::string& what) { throw InputError(where, what); }

std::int64_t as_int(Ref v, const std::string& where, const char* what) {
  if (v == nullptr || !v->is_int()) bad(where, std::string(what) + " is not an integer");
  return v->i;
}

std::vector<std::int64_t> as_shape(Ref v, const std::string& where) {
  if (v == nullptr || v->kind != Kind::Tuple) bad(where, "array shape is not a tuple");
  if (v->items.size() > 32) bad(where, "array has too many dimensions");
  std::vector<std::int64_t> shape;
  for (const Value* d : v->items) {
    const std::int64_t n = as_int(d, where, "array dimension");
    if (n < 0) bad(where, "negative array dimension");
    shape.push_back(n);
  }
  return shape;
}

struct RawArray {
  std::vector<std::int64_t> shape;
  char kind = 'f';  // 'f' float, 'i' signed, 'u' unsigned, 'b' bool
  int itemsize = 4;
  bool big_endian = false;
  bool fortran = false;
  std::string_view bytes;
  std::int64_t count = 0;
};

RawArray raw_array(Ref v, const std::string& where) {
  if (v == nullptr || v->kind != Kind::Object || v->global != Global::NdArray) {
    bad(where, "expected a numpy array, found " + describe(v, 0));
  }
  const Value* st = v->state;
  if (st == nullptr || st->kind != Kind::Tuple) bad(where, "numpy array without a state tuple");
  // (version, shape, dtype, is_fortran, data) or the old (shape, dtype, is_fortran, data).
  std::size_t o = 0;
  if (st->items.size() == 5) {
    o = 1;
  } else if (st->items.size() != 4) {
    bad(where, "numpy array state has " + std::to_string(st->items.size()) + " items");
  }
  RawArray r;
  r.shape = as_shape(st->items[o], where);
  const Value* dt = st->items[o + 1];
  const Value* fortran = st->items[o + 2];
  const Value* data = st->items[o + 3];
  if (!fortran->is_int()) bad(where, "numpy array fortran flag is not a bool");
  r.fortran = fortran->i != 0;
  if (dt->kind != Kind::Object || dt->global != Global::Dtype || dt->args == nullptr || dt->args->items.empty() ||
      !dt->args->items[0]->is_string_like()) {
    bad(where, "numpy array has no valid dtype");
  }
  const std::string& code = dt->args->items[0]->s;
  if (code.size() != 2 || std::string_view("fiub").find(code[0]) == std::string_view::npos || code[1] < '1' ||
      code[1] > '8') {
    bad(where, "unsupported numpy dtype '" + printable(code) + "'");
  }
  r.kind = code[0];
  r.itemsize = code[1] - '0';
  const bool ok = (r.kind == 'f' && (r.itemsize == 4 || r.itemsize == 8)) || (r.kind == 'b' && r.itemsize == 1) ||
                  ((r.kind == 'i' || r.kind == 'u') &&
                   (r.itemsize == 1 || r.itemsize == 2 || r.itemsize == 4 || r.itemsize == 8));
  if (!ok) bad(where, "unsupported numpy dtype '" + printable(code) + "'");
  // dtype state: (version, byteorder, subarray, names, fields, elsize, alignment, flags[, metadata])
  if (dt->state != nullptr) {
    if (dt->state->kind != Kind::Tuple || dt->state->items.size() < 2 || !dt->state->items[1]->is_string_like()) {
      bad(where, "bad numpy dtype state");
    }
    const std::string& order = dt->state->items[1]->s;
    if (order == ">") {
      r.big_endian = true;
    } else if (order != "<" && order != "|" && order != "=") {
      bad(where, "bad numpy byte order '" + printable(order) + "'");
    }
    if (dt->state->items.size() >= 5 &&
        (dt->state->items[2]->kind != Kind::None || dt->state->items[3]->kind != Kind::None ||
         dt->state->items[4]->kind != Kind::None)) {
      bad(where, "structured or subarray numpy dtypes are not supported");
    }
  }
  if (!data->is_string_like()) bad(where, "numpy array data is not a byte string (object arrays are not supported)");
  if (data->kind == Kind::Str) bad(where, "numpy array data is a unicode string (pickle written without latin1 bytes)");
  std::int64_t count = 1;
  for (std::int64_t d : r.shape) {
    if (d != 0 && count > std::numeric_limits<std::int64_t>::max() / 8 / d) bad(where, "numpy array is too large");
    count *= d;
  }
  if (static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(r.itemsize) != data->s.size()) {
    bad(where, "numpy array data has " + std::to_string(data->s.size()) + " bytes, shape and dtype need " +
                   std::to_string(count * r.itemsize));
  }
  r.count = count;
  r.bytes = data->s;
  return r;
}

template <typename T>
T load_element(const RawArray& r, std::int64_t k) {
  unsigned char b[8] = {};
  const auto* src = reinterpret_cast<const unsigned char*>(r.bytes.data()) + k * r.itemsize;
  for (int j = 0; j < r.itemsize; ++j) b[j] = src[r.big_endian ? r.itemsize - 1 - j : j];
  switch (r.kind) {
    case 'f':
      if (r.itemsize == 4) {
        float f;
        std::memcpy(&f, b, 4);
        return static_cast<T>(f);
      } else {
        double f;
        std::memcpy(&f, b, 8);
        return static_cast<T>(f);
      }
    case 'b':
      return static_cast<T>(b[0] != 0 ? 1 : 0);
    default: {
      std::uint64_t u = 0;
      for (int j = 0; j < r.itemsize; ++j) u |= static_cast<std::uint64_t>(b[j]) << (8 * j);
      if (r.kind == 'i' && r.itemsize < 8 && (u >> (8 * r.itemsize - 1)) != 0) {
        u |= ~std::uint64_t{0} << (8 * r.itemsize);  // sign-extend
      }
      if (r.kind == 'u' && r.itemsize == 8 && u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        return static_cast<T>(static_cast<double>(u));
      }
      return static_cast<T>(static_cast<std::int64_t>(u));
    }
  }
}

template <typename T>
Array<T> convert(const RawArray& r) {
  Array<T> out;
  out.shape = r.shape;
  out.data.resize(static_cast<std::size_t>(r.count));
  if (!r.fortran || r.shape.size() < 2) {
    for (std::int64_t k = 0; k < r.count; ++k) out.data[static_cast<std::size_t>(k)] = load_element<T>(r, k);
    return out;
  }
  // Fortran order: element (i0, i1, ..., in) is at i0 + d0*(i1 + d1*(...)). Walk the C-order
  // index odometer and compute the Fortran offset.
  const std::size_t nd = r.shape.size();
  std::vector<std::int64_t> idx(nd, 0), fstride(nd, 1);
  for (std::size_t d = 1; d < nd; ++d) fstride[d] = fstride[d - 1] * r.shape[d - 1];
  for (std::int64_t k = 0; k < r.count; ++k) {
    std::int64_t off = 0;
    for (std::size_t d = 0; d < nd; ++d) off += idx[d] * fstride[d];
    out.data[static_cast<std::size_t>(k)] = load_element<T>(r, off);
    for (std::size_t d = nd; d-- > 0;) {
      if (++idx[d] < r.shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

}  // namespace

Array<double> to_float_array(Ref v, const std::string& where) { return convert<double>(raw_array(v, where)); }

Array<std::int64_t> to_int_array(Ref v, const std::string& where) {
  const RawArray r = raw_array(v, where);
  if (r.kind == 'f') bad(where, "expected an integer numpy array, found a float one");
  if (r.kind == 'u' && r.itemsize == 8) bad(where, "uint64 arrays are not supported");
  return convert<std::int64_t>(r);
}

Csr to_csr(Ref v, const std::string& where) {
  if (v == nullptr || v->kind != Kind::Object || v->global != Global::CsrMatrix) {
    bad(where, "expected a scipy csr_matrix, found " + describe(v, 0));
  }
  const Value* st = v->state;
  if (st == nullptr || st->kind != Kind::Dict) bad(where, "csr_matrix without a state dict");
  if (const Value* fmt = st->get("format"); fmt != nullptr && (!fmt->is_string_like() || fmt->s != "csr")) {
    bad(where, "sparse matrix format is not csr");
  }
  const Value* shape = st->get("_shape");
  if (shape == nullptr) shape = st->get("shape");
  const std::vector<std::int64_t> dims = as_shape(shape, where);
  if (dims.size() != 2) bad(where, "csr_matrix shape is not 2-D");
  const Value* indptr = st->get("indptr");
  const Value* indices = st->get("indices");
  const Value* data = st->get("data");
  if (indptr == nullptr || indices == nullptr || data == nullptr) bad(where, "csr_matrix lacks indptr/indices/data");
  Csr m;
  m.rows = dims[0];
  m.cols = dims[1];
  Array<std::int64_t> p = to_int_array(indptr, where);
  Array<std::int64_t> ix = to_int_array(indices, where);
  Array<double> d = to_float_array(data, where);
  if (p.shape.size() != 1 || ix.shape.size() != 1 || d.shape.size() != 1) bad(where, "csr_matrix arrays are not 1-D");
  if (static_cast<std::int64_t>(p.data.size()) != m.rows + 1) {
    bad(where, "csr_matrix indptr has " + std::to_string(p.data.size()) + " entries for " + std::to_string(m.rows) +
                   " rows");
  }
  if (ix.data.size() != d.data.size()) bad(where, "csr_matrix indices and data differ in length");
  const auto nnz = static_cast<std::int64_t>(ix.data.size());
  if (p.data.front() != 0 || p.data.back() != nnz) bad(where, "csr_matrix indptr does not run from 0 to nnz");
  for (std::size_t r = 0; r + 1 < p.data.size(); ++r) {
    if (p.data[r + 1] < p.data[r]) bad(where, "csr_matrix indptr is not monotone");
  }
  for (std::int64_t c : ix.data) {
    if (c < 0 || c >= m.cols) bad(where, "csr_matrix column index " + std::to_string(c) + " out of range");
  }
  m.indptr = std::move(p.data);
  m.indices = std::move(ix.data);
  m.data = std::move(d.data);
  return m;
}

std::vector<std::pair<std::int64_t, std::vector<std::int64_t>>> to_int_list_dict(Ref v, const std::string& where) {
  if (v == nullptr || v->kind != Kind::Dict) bad(where, "expected a dict, found " + describe(v, 0));
  std::vector<std::pair<std::int64_t, std::vector<std::int64_t>>> out;
  std::unordered_map<std::int64_t, std::size_t> seen;
  for (const auto& [k, val] : v->dict) {
    const std::int64_t key = as_int(k, where, "dict key");
    if (val->kind != Kind::List && val->kind != Kind::Tuple) bad(where, "dict value is not a list");
    std::vector<std::int64_t> items;
    items.reserve(val->items.size());
    for (const Value* x : val->items) items.push_back(as_int(x, where, "list element"));
    const auto [it, inserted] = seen.emplace(key, out.size());
    if (inserted) {
      out.emplace_back(key, std::move(items));
    } else {
      out[it->second].second = std::move(items);  // later keys override, as in Python
    }
  }
  return out;
}

std::string describe(Ref v, int depth) {
  if (v == nullptr) return "nothing";
  switch (v->kind) {
    case Kind::None:
      return "None";
    case Kind::Bool:
      return v->b ? "True" : "False";
    case Kind::Int:
      return std::to_string(v->i);
    case Kind::Float: {
      std::ostringstream s;
      s << v->f;
      return s.str();
    }
    case Kind::Str:
      return "'" + printable(v->s) + "'";
    case Kind::Bytes:
      return "b'" + printable(v->s) + "'";
    case Kind::GlobalRef:
      return "<global " + printable(v->s) + ">";
    case Kind::Tuple:
    case Kind::List: {
      const bool tuple = v->kind == Kind::Tuple;
      std::string s = tuple ? "(" : "[";
      if (depth <= 0) {
        s += std::to_string(v->items.size()) + " items";
      } else {
        for (std::size_t k = 0; k < v->items.size() && k < 8; ++k) {
          if (k) s += ", ";
          s += describe(v->items[k], depth - 1);
        }
        if (v->items.size() > 8) s += ", ...";
      }
      return s + (tuple ? ")" : "]");
    }
    case Kind::Dict:
      return "{dict of " + std::to_string(v->dict.size()) + " items}";
    case Kind::Object: {
      static const char* names[] = {"numpy.ndarray", "numpy.dtype", "numpy._reconstruct", "scipy csr_matrix",
                                    "defaultdict", "_reconstructor", "list", "dict", "tuple", "object"};
      return std::string("<") + names[static_cast<int>(v->global)] + " object>";
    }
  }
  return "?";
}

}  // namespace plexus::pickle
