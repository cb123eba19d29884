"""The browser appendix's tests share: the exported models run with ONNX Runtime, toy reviews
for them, and the page's tokenizer (`_static/web/bpe.mjs`) run under node."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

from support import ROOT

NODE = shutil.which("node")
RUNNER = ROOT / "tests" / "web_tokenize.mjs"
WORDS = ["the", "film", "was", "not", "bad", "at", "all", "great", "awful", "boring", "I",
         "loved", "hated", "it", "plot", "acting", "superb", "dull", "!", ".", ",", "苹果",
         "😀", "<br />", "10/10"]


def session_of(path: Path):  # -> onnxruntime.InferenceSession
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1  # a shared machine
    return ort.InferenceSession(path, options)


def reviews(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(1, 80))) for _ in range(count)]


def run_node(record: dict, texts: list[str], tmp_path: Path) -> list[dict]:
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    result = subprocess.run([NODE, str(RUNNER), str(path)], input=json.dumps(texts),
                            capture_output=True, text=True, timeout=1800, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    output = json.loads(result.stdout)
    print(f"node: {len(texts):,} texts in {output['seconds']:.1f} s")
    return output["results"]
