"""Write a Hugging Face tokenizer directory for SmolLM2 from its GGUF, for benchmarks/peers.py.

    python benchmarks/peers_tokenizer.py MODEL.gguf ~/.cache/rigbench-peers/smollm2-tokenizer

The peers size their synthetic prompts with the model's tokenizer and the hub is out of reach here:
the GGUF carries the vocabulary and merges (tokenizer.ggml.*), byte-level BPE with digits split
(llama.cpp's "smollm" pre-tokenizer). Needs `gguf` (a rigbench dependency) and `tokenizers`.
"""
import json
import sys
from pathlib import Path

import gguf
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

gg, out = sys.argv[1], Path(sys.argv[2])
r = gguf.GGUFReader(gg)
def arr(key: str) -> list[str]:
    f = r.fields[key]
    return [bytes(f.parts[i]).decode("utf-8") for i in f.data]
def scalar(key: str) -> int:
    f = r.fields[key]
    return int(f.parts[f.data[0]][0])
tokens = arr("tokenizer.ggml.tokens")
merges = [(a, b) for a, _, b in (m.partition(" ") for m in arr("tokenizer.ggml.merges"))]
vocab = {t: i for i, t in enumerate(tokens)}
tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
# llama.cpp's "smollm" pre-tokenizer: digits one at a time, then GPT-2 byte-level splitting
tok.pre_tokenizer = pre_tokenizers.Sequence([
    pre_tokenizers.Digits(individual_digits=True),
    pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
])
tok.decoder = decoders.ByteLevel()
special = [t for t in tokens if t.startswith("<|") and t.endswith("|>")]
tok.add_special_tokens(special)
out.mkdir(parents=True, exist_ok=True)
tok.save(str(out / "tokenizer.json"))
bos, eos = tokens[scalar("tokenizer.ggml.bos_token_id")], tokens[scalar("tokenizer.ggml.eos_token_id")]
tmpl = bytes(r.fields["tokenizer.chat_template"].parts[r.fields["tokenizer.chat_template"].data[0]]).decode()
(out / "tokenizer_config.json").write_text(json.dumps({
    "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": bos, "eos_token": eos,
    "model_max_length": 8192, "chat_template": tmpl, "clean_up_tokenization_spaces": False}))
(out / "config.json").write_text(json.dumps({"model_type": "llama", "vocab_size": len(tokens)}))
print(len(tokens), len(merges), bos, eos)
