"""Write a random-weight llama-architecture GGUF of a given shape, streaming tensor by tensor.

Weights are N(0, 0.02)-like, never zeros: F16 directly, or Q8_0 blocks (fp16 scale + 32 int8)
drawn at random, so a 30B-shaped model needs no 60 GB of float32 in memory first. Uses torch on
the GPU when there is one (fast), numpy otherwise (for small local checks).

    python mkgguf.py OUT.gguf --layers 52 --hidden 6656 --heads 32 --kv-heads 2 --ffn 19968 \
        --vocab 202048 --type q8_0
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

try:
    import gguf
except ImportError:  # on the GPU machine gguf comes from the llama.cpp source tree
    sys.path.insert(0, "/tmp/gpu/src/gguf-py")
    import gguf

Q8_BLOCK = 32


class Rand:
    def __init__(self, seed: int) -> None:
        try:
            import torch

            self.torch = torch if torch.cuda.is_available() else None
        except ImportError:
            self.torch = None
        if self.torch is not None:
            self.gen = self.torch.Generator(device="cuda").manual_seed(seed)
        self.rng = np.random.default_rng(seed)

    def f16(self, rows: int, cols: int) -> np.ndarray:
        if self.torch is not None:
            t = self.torch.randn(rows, cols, device="cuda", generator=self.gen) * 0.02
            return t.half().cpu().numpy()
        return (self.rng.standard_normal((rows, cols), dtype=np.float32) * 0.02).astype(np.float16)

    def q8_0(self, rows: int, cols: int) -> np.ndarray:
        """(rows, cols/32*34) uint8: per block an fp16 scale then 32 int8 quants."""
        nb = cols // Q8_BLOCK
        scale = np.float16(0.02 * 1.7 / 127)  # quants uniform in [-127, 127]: std ~0.02
        if self.torch is not None:
            torch = self.torch
            q = torch.randint(
                -127, 128, (rows, nb, Q8_BLOCK), device="cuda", generator=self.gen, dtype=torch.int8
            )
            d = torch.full((rows, nb, 1), float(scale), device="cuda", dtype=torch.float16).view(torch.uint8)
            return torch.cat([d, q.view(torch.uint8)], dim=2).reshape(rows, nb * 34).cpu().numpy()
        q = self.rng.integers(-127, 128, (rows, nb, Q8_BLOCK), dtype=np.int8).view(np.uint8)
        d = np.full((rows, nb, 1), scale, dtype=np.float16).view(np.uint8)
        return np.concatenate([d, q], axis=2).reshape(rows, nb * 34)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--hidden", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--kv-heads", type=int, required=True)
    ap.add_argument("--ffn", type=int, required=True)
    ap.add_argument("--vocab", type=int, required=True)
    ap.add_argument("--type", choices=["f16", "q8_0"], default="f16")
    ap.add_argument("--ctx", type=int, default=32768)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    t0 = time.time()
    H, L, V, F = a.hidden, a.layers, a.vocab, a.ffn
    hd = H // a.heads
    kv = a.kv_heads * hd
    qtype = gguf.GGMLQuantizationType.Q8_0 if a.type == "q8_0" else gguf.GGMLQuantizationType.F16
    w = gguf.GGUFWriter(a.out, "llama")
    w.add_name(f"random-{L}L-{H}h-{a.type}")
    w.add_block_count(L)
    w.add_context_length(a.ctx)
    w.add_embedding_length(H)
    w.add_feed_forward_length(F)
    w.add_head_count(a.heads)
    w.add_head_count_kv(a.kv_heads)
    w.add_rope_dimension_count(hd)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(7 if a.type == "q8_0" else 1)
    toks = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)]
    toks += [f"\u2581t{i}" for i in range(V - len(toks))]
    w.add_tokenizer_model("llama")
    w.add_token_list(toks)
    w.add_token_scores([0.0] * V)
    w.add_token_types([2, 3, 3] + [6] * 256 + [1] * (V - 259))
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    # (name, rows, cols, kind): matrices in `qtype`, norms in F32
    plan: list[tuple[str, int, int, str]] = [
        ("token_embd.weight", V, H, "m"),
        ("output_norm.weight", 1, H, "n"),
        ("output.weight", V, H, "m"),
    ]
    for i in range(L):
        p = f"blk.{i}."
        plan += [
            (p + "attn_norm.weight", 1, H, "n"),
            (p + "ffn_norm.weight", 1, H, "n"),
            (p + "attn_q.weight", H, H, "m"),
            (p + "attn_k.weight", kv, H, "m"),
            (p + "attn_v.weight", kv, H, "m"),
            (p + "attn_output.weight", H, H, "m"),
            (p + "ffn_gate.weight", F, H, "m"),
            (p + "ffn_up.weight", F, H, "m"),
            (p + "ffn_down.weight", H, F, "m"),
        ]
    total = 0
    for name, rows, cols, kind in plan:
        if kind == "n":
            w.add_tensor_info(name, (cols,), np.dtype(np.float32), cols * 4)
            total += cols * 4
        elif qtype == gguf.GGMLQuantizationType.Q8_0:
            nbytes = rows * cols // Q8_BLOCK * 34
            w.add_tensor_info(
                name, (rows, cols // Q8_BLOCK * 34), np.dtype(np.uint8), nbytes, raw_dtype=qtype
            )
            total += nbytes
        else:
            w.add_tensor_info(name, (rows, cols), np.dtype(np.float16), rows * cols * 2)
            total += rows * cols * 2
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    rnd = Rand(a.seed)
    for _name, rows, cols, kind in plan:
        if kind == "n":
            w.write_tensor_data(np.ones(cols, dtype=np.float32))
        elif qtype == gguf.GGMLQuantizationType.Q8_0:
            # big matrices in row slices so GPU/host memory stays small
            step = max(1, (1 << 28) // max(1, cols))
            parts = [rnd.q8_0(min(step, rows - r), cols) for r in range(0, rows, step)]
            w.write_tensor_data(np.concatenate(parts, axis=0) if len(parts) > 1 else parts[0])
        else:
            step = max(1, (1 << 28) // max(1, cols))
            parts = [rnd.f16(min(step, rows - r), cols) for r in range(0, rows, step)]
            w.write_tensor_data(np.concatenate(parts, axis=0) if len(parts) > 1 else parts[0])
    w.close()
    print(
        f"{a.out}: {total / 1e9:.2f} GB of tensors ({a.type}), {L} layers, written in {time.time() - t0:.0f} s",
        flush=True,
    )


if __name__ == "__main__":
    main()
