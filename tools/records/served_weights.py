"""The served classifier rebuilt from its committed ONNX file: the box's own weights as a
`BertForSequenceClassification`, for the scripts that need PyTorch (training on from it,
token contributions) where the training checkpoint is not kept.

`_static/models/imdb/model.onnx` (checked against the page's manifest) holds every weight of
the model the box serves: the named ones under their state-dict names (`model.` before them),
the token table as float16 (read back as float32: the values the box computes with), and the
projections as the transposed matrices of its `MatMul` nodes, found by the nodes that read
them (three from the first layer norm's output: query, key and value, in the graph's order;
one before the attention's output bias; one before each feed-forward bias). The segment
table's row 0, the only one a classifier reads, is the constant added after the positions.
`served_model` checks the rebuilt model against the ONNX file itself: P(positive) and every
token's contribution on a few texts, framed as the box frames them.

What this deliberately does not handle: GPT exports, models of more than one layer, and a
segment row other than 0 (it is not in the file; row 1 is set equal to row 0).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from scratchbook.record import book_root

FOLDER = book_root() / "_static" / "models" / "imdb"
CHECK_TEXTS = ("It is not bad, it is good.", "A dull, lifeless film, but the cast is great.",
               "Although the acting is weak, I loved every minute of it.",
               "Meh.", "The plot is thin and the ending drags on, yet it charmed me.")


def onnx_weights(path: Path) -> tuple[dict, dict]:
    """The file's initializers as arrays, and the nodes that read each one."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(path)).graph
    arrays = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    readers: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            if name in arrays:
                readers.setdefault(name, []).append(node)
    return arrays, {"graph": graph, "readers": readers}


def state_dict_of(arrays: dict, graph) -> dict:
    """The model's state dict from the file's arrays."""
    import torch

    state = {name.removeprefix("model."): torch.tensor(array.astype(np.float32))
             for name, array in arrays.items() if name.startswith("model.")}
    matmuls = [node for node in graph.node if node.op_type == "MatMul"
               and node.input[1] in arrays and arrays[node.input[1]].ndim == 2]
    after_ln1 = [n.input[1] for n in matmuls if n.input[0] == "layer_norm_1"]
    after_ln2 = [n.input[1] for n in matmuls if n.input[0] == "layer_norm_2"]
    rest = [n.input[1] for n in matmuls if n.input[0] not in ("layer_norm_1", "layer_norm_2")]
    if len(after_ln1) != 3 or len(after_ln2) != 1 or len(rest) != 2:
        raise ValueError("the ONNX graph is not one block of the shape expected")
    out_proj, contract = sorted(rest, key=lambda n: arrays[n].shape[0])  # (64,64), (256,64)
    block = "encoder.blocks.0."
    for name, key in zip(after_ln1, ("attn.W_query", "attn.W_key", "attn.W_value")):
        state[f"{block}{key}.weight"] = torch.tensor(arrays[name].T.copy())
    state[f"{block}attn.out_proj.weight"] = torch.tensor(arrays[out_proj].T.copy())
    state[f"{block}ff.expand.weight"] = torch.tensor(arrays[after_ln2[0]].T.copy())
    state[f"{block}ff.contract.weight"] = torch.tensor(arrays[contract].T.copy())
    tables = [n for n, a in arrays.items() if a.ndim == 2 and a.shape[0] > 50000]
    state["encoder.embedding.token.lookup.weight"] = torch.tensor(
        arrays[tables[0]].astype(np.float32))
    state["encoder.embedding.position.table.weight"] = state.pop(
        "encoder.embedding.position.table.weight")
    segment = torch.tensor(arrays["select"].astype(np.float32))
    state["encoder.embedding.segment.lookup.weight"] = torch.stack([segment, segment])
    return state


def served_model(folder: Path = FOLDER):
    """(the served model rebuilt, what the record says of it), checked against the file."""
    import torch

    from scratchformer.data.framing import review_token_lists
    from scratchformer.io.fingerprint import file_sha256
    from scratchformer.models.bert import BertConfig, BertForSequenceClassification
    from scratchformer.train.loop import classify_texts

    from onnx_reviews import one_thread_session, onnx_reviews

    manifest = json.loads((folder / "manifest.json").read_text())
    path = folder / "model.onnx"
    sha256 = file_sha256(path)
    if sha256 != manifest["files"]["model.onnx"]["sha256"]:
        raise SystemExit(f"{path}: not the file the page's manifest names")
    arrays, parts = onnx_weights(path)
    model = BertForSequenceClassification(BertConfig(**manifest["config"]),
                                          manifest["num_classes"])
    model.load_state_dict(state_dict_of(arrays, parts["graph"]))  # strict: every weight
    model.eval()
    framing = json.loads((folder / "tokenizer.json").read_text())["framing"]
    tokens = review_token_lists(list(CHECK_TEXTS))
    onnx_positive, onnx_shares = onnx_reviews(one_thread_session(path), tokens, framing)
    with torch.no_grad():
        torch_positive = [row["probabilities"]["positive"]
                          for row in classify_texts(model, list(CHECK_TEXTS), "windows")]
    difference = float(np.max(np.abs(np.array(torch_positive) - onnx_positive)))
    if difference > 1e-4:
        raise SystemExit(f"the rebuilt model is {difference} from the ONNX file's "
                         "P(positive): the weights were not read right")
    return model, {"onnx_file": str(path.relative_to(book_root())), "onnx_sha256": sha256,
                   "checkpoint_sha256_served": manifest["checkpoint"]["sha256"],
                   "command": manifest["command"],
                   "rebuilt": "every weight read from the ONNX file (token table float16, "
                              "read as float32), checked against the file on "
                              f"{len(CHECK_TEXTS)} texts",
                   "largest_difference_from_onnx": difference}
