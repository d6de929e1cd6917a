#pragma once
// What a GPT model consists of, private to io/ (and its tests; not installed): its parameter
// tensors in GPT-2's names and shapes, and its character vocabulary. The model file reader
// and writer (io/model_files/gpt_model.cpp) and the corpus reader (io/corpus/text_corpus.cpp,
// the vocabulary) share these, so that every file agrees on what "the tensors of a GPT with
// this configuration" are.
#include <string>
#include <utility>
#include <vector>

#include "plexus/gpt.hpp"

namespace plexus {

// Every parameter tensor of a GPT with configuration `c` with its shape {rows, cols}, in GPT-2's
// order: wte [vocab × embed], wpe [block × embed], then for each layer l
//   h.l.ln_1.weight, h.l.ln_1.bias              [embed]
//   h.l.attn.c_attn.weight [embed × 3·embed], h.l.attn.c_attn.bias [3·embed]
//   h.l.attn.c_proj.weight [embed × embed],   h.l.attn.c_proj.bias [embed]
//   h.l.ln_2.weight, h.l.ln_2.bias              [embed]
//   h.l.mlp.c_fc.weight [embed × 4·embed],    h.l.mlp.c_fc.bias [4·embed]
//   h.l.mlp.c_proj.weight [4·embed × embed],  h.l.mlp.c_proj.bias [embed]
// then ln_f.weight, ln_f.bias [embed], and lm_head.weight [vocab × embed] only when !c.tied.
// Vectors have rows = 1. `c` must pass validate(GptConfig) (the list has 12·layers + 4 or 5
// entries).
std::vector<std::pair<std::string, std::pair<index_t, index_t>>> gpt_tensor_shapes(const GptConfig& c);

// Checks that `w` holds exactly the tensors of gpt_tensor_shapes(c), each with its shape and
// rows·cols values; throws InputError(where, "<tensor>: <what is wrong>") for the first that
// does not (missing ones first, in GPT-2 order, then unexpected ones). `c` as above.
void check_gpt_weights(const GptConfig& c, const GptWeights& w, const std::string& where);

// What is wrong with a character vocabulary (the tokens of a character-level model), or ""
// when nothing is: every entry must be one UTF-8 encoded Unicode character (no surrogates, no
// overlong forms) and no two entries the same character. (io/corpus/text_corpus.cpp)
std::string character_vocabulary_problem(const std::vector<std::string>& chars);

// write_gpt_model_h5 without checking the model against its configuration: it writes the
// configuration, tensors and vocabulary as given (checking only that each tensor's data holds
// rows·cols values, which the write itself relies on). Everything else calls
// write_gpt_model_h5; this exists so that tests can build inconsistent files for the reader.
void write_gpt_model_h5_unchecked(const std::string& path, const GptModelFile& model);

}  // namespace plexus
