// The widgets of the appendix "Running the models in the browser": the classifier and the GPT
// that `scratchformer export-web` wrote into _static/models/, run by ONNX Runtime Web from
// _static/ort/ (nothing is fetched from anywhere but this site). Which models the site has is
// in _static/models/index.json, written by the build; without them the page says how to export.
import { BPETokenizer, encodeReview } from "./bpe.mjs";

const ROOT = new URL("../../", import.meta.url);  // the site's root: _static/web/ is two below
const MODELS = new URL("_static/models/", ROOT);
let runtime = null;

async function loadRuntime() {
  if (!runtime) {
    runtime = import(new URL("_static/ort/ort.wasm.min.mjs", ROOT).href).then((ort) => {
      ort.env.wasm.wasmPaths = new URL("_static/ort/", ROOT).href;
      ort.env.wasm.numThreads = 1;  // threads need cross-origin isolation a static site lacks
      return ort;
    });
  }
  return runtime;
}

async function loadModel(name) {
  const base = new URL(`${name}/`, MODELS);
  const manifest = await (await fetch(new URL("manifest.json", base))).json();
  const ort = await loadRuntime();
  const [tokenizer, session] = await Promise.all([
    BPETokenizer.load(new URL("tokenizer.json", base)),
    ort.InferenceSession.create(new URL("model.onnx", base).href),
  ]);
  return { ort, manifest, tokenizer, session };
}

const $ = (root, selector) => root.querySelector(selector);

// A token's text; a token that holds only part of a character (byte-level BPE splits 苹 into
// pieces) shows its bytes instead, as ⟨e8 8b⟩.
function tokenText(tokenizer, id) {
  const special = Object.entries(tokenizer.record.framing || {}).find(
    ([key, value]) => ["cls", "sep", "pad"].includes(key) && value === id);
  if (special) return `[${special[0].toUpperCase()}]`;
  const text = tokenizer.decode([id]);
  const hex = tokenizer.record.tokens[id];
  return text.includes("\uFFFD") && hex ? `⟨${hex.match(/../g).join(" ")}⟩` : text;
}

// ---- the classifier -------------------------------------------------------------------
async function classifierWidget(root, name) {
  const status = $(root, ".sf-status");
  const model = await loadModel(name);
  const { ort, manifest, tokenizer, session } = model;
  const framing = tokenizer.record.framing;
  const { num_layers: layers, num_heads: heads } = manifest.config;
  for (const [select, count] of [[$(root, ".sf-layer"), layers], [$(root, ".sf-head"), heads]]) {
    for (let i = 0; i < count; i++) select.add(new Option(String(i + 1), String(i)));
  }
  const accuracy = manifest.test_accuracy;
  status.textContent = `Model ${manifest.checkpoint.sha256.slice(0, 12)}…` +
    (accuracy != null ? `, test accuracy ${(100 * accuracy).toFixed(2)}%` : "") + ".";
  let last = null;
  async function classify() {
    const text = $(root, ".sf-review").value;
    const ids = encodeReview(tokenizer, text);
    const started = performance.now();
    const feeds = { ids: new ort.Tensor("int64", BigInt64Array.from(ids, BigInt),
                                        [1, ids.length]) };
    const out = await session.run(feeds);
    const probability = out.probabilities.data[1];
    const verdict = $(root, ".sf-verdict");
    verdict.textContent = `${probability >= 0.5 ? "positive" : "negative"}: ` +
      `P(positive) = ${probability.toFixed(4)} (${(performance.now() - started).toFixed(0)} ms)`;
    verdict.dataset.probability = String(probability);
    verdict.dataset.ids = JSON.stringify(ids);
    verdict.dataset.runs = String(Number(verdict.dataset.runs || 0) + 1);
    const real = ids.indexOf(framing.sep) + 1;
    const shares = Array.from(out.contributions.data.slice(0, real));
    const biggest = Math.max(1e-9, ...shares.map(Math.abs));
    const tokens = $(root, ".sf-tokens");
    tokens.replaceChildren(...ids.slice(0, real).map((id, i) => {
      const span = document.createElement("span");
      span.textContent = tokenText(tokenizer, id);
      const alpha = Math.abs(shares[i]) / biggest;
      span.style.background = shares[i] >= 0 ? `rgba(0, 150, 60, ${alpha})`
                                              : `rgba(200, 30, 30, ${alpha})`;
      span.title = `${shares[i] >= 0 ? "+" : ""}${shares[i].toFixed(4)}`;
      span.dataset.contribution = String(shares[i]);
      return span;
    }));
    last = { attention: out.attention, real, length: ids.length };
    drawAttention();
  }
  function drawAttention() {
    if (!last) return;
    const canvas = $(root, ".sf-heatmap");
    const { attention, real, length } = last;
    const layer = Number($(root, ".sf-layer").value), head = Number($(root, ".sf-head").value);
    const cell = Math.max(1, Math.floor(360 / real));
    canvas.width = canvas.height = cell * real;
    const context = canvas.getContext("2d");
    const offset = (layer * heads + head) * length * length;  // (1, L, H, T, T)
    for (let q = 0; q < real; q++) {
      for (let k = 0; k < real; k++) {
        const weight = attention.data[offset + q * length + k];
        context.fillStyle = `rgba(30, 80, 200, ${Math.sqrt(weight)})`;
        context.clearRect(k * cell, q * cell, cell, cell);
        context.fillRect(k * cell, q * cell, cell, cell);
      }
    }
  }
  let pending = null;
  $(root, ".sf-review").addEventListener("input", () => {
    clearTimeout(pending);
    pending = setTimeout(classify, 150);
  });
  $(root, ".sf-layer").addEventListener("change", drawAttention);
  $(root, ".sf-head").addEventListener("change", drawAttention);
  await classify();
}

// ---- the GPT --------------------------------------------------------------------------
// Chapter 12's next_token_probabilities: temperature, then top-k (ties kept), then top-p.
export function nextTokenProbabilities(logits, temperature, topK, topP) {
  const n = logits.length;
  let best = 0;
  for (let i = 1; i < n; i++) if (logits[i] > logits[best]) best = i;
  const p = new Float64Array(n);
  if (temperature === 0) { p[best] = 1; return p; }
  let sum = 0;
  for (let i = 0; i < n; i++) { p[i] = Math.exp((logits[i] - logits[best]) / temperature); sum += p[i]; }
  for (let i = 0; i < n; i++) p[i] /= sum;
  const renormalize = () => { const s = p.reduce((a, b) => a + b, 0); for (let i = 0; i < n; i++) p[i] /= s; };
  if (topK && topK < n) {
    const kth = Float64Array.from(p).sort().reverse()[topK - 1];
    for (let i = 0; i < n; i++) if (p[i] < kth) p[i] = 0;
    renormalize();
  }
  if (topP && topP < 1) {
    const order = Array.from(p.keys()).sort((a, b) => p[b] - p[a]);
    let before = 0;
    for (const i of order) { const mass = p[i]; if (before >= topP) p[i] = 0; before += mass; }
    renormalize();
  }
  return p;
}

async function gptWidget(root, name) {
  const status = $(root, ".sf-status");
  const { ort, manifest, tokenizer, session } = await loadModel(name);
  const { num_layers: layers, num_heads: heads, context_length: contextLength } = manifest.config;
  const headDim = manifest.head_dim;
  const bpb = manifest.bits_per_byte;
  status.textContent = `Model ${manifest.checkpoint.sha256.slice(0, 12)}…` +
    (bpb != null ? `, ${bpb.toFixed(3)} bits per byte on held-out reviews` : "") + ".";
  const empty = () => new ort.Tensor("float32", new Float32Array(0), [layers, 1, heads, 0, headDim]);
  let state = null;
  function reset() {
    const specials = tokenizer.specialIds;
    const prefix = [specials["<|endoftext|>"]];
    const sentiment = $(root, ".sf-sentiment").value;
    if (sentiment) prefix.push(specials[sentiment]);
    const prompt = prefix.concat(tokenizer.encodeOrdinary($(root, ".sf-prompt").value));
    state = { ids: prompt, unread: prompt, keys: empty(), values: empty(), start: prompt.length };
    show(null);
  }
  function show(probabilities) {
    const text = $(root, ".sf-text");
    text.textContent = tokenizer.decode(state.ids.slice(1).filter((id) => id < tokenizer.record.tokens.length));
    text.dataset.ids = JSON.stringify(state.ids);
    const bars = $(root, ".sf-bars");
    if (!probabilities) { bars.replaceChildren(); return; }
    const top = Array.from(probabilities.keys()).filter((id) => probabilities[id] > 0)
      .sort((a, b) => probabilities[b] - probabilities[a]).slice(0, 10);
    bars.replaceChildren(...top.map((id) => {
      const row = document.createElement("div");
      const bar = document.createElement("span");
      bar.className = "sf-bar";
      bar.style.width = `${(300 * probabilities[id]).toFixed(1)}px`;
      row.append(bar, ` ${JSON.stringify(tokenText(tokenizer, id))} ${probabilities[id].toFixed(3)}`);
      return row;
    }));
  }
  async function step() {
    if (state.ids.length >= contextLength) return false;
    const cache = $(root, ".sf-cache").checked;
    const input = cache ? state.unread : state.ids;
    const feeds = {
      ids: new ort.Tensor("int64", BigInt64Array.from(input, BigInt), [1, input.length]),
      past_keys: cache ? state.keys : empty(), past_values: cache ? state.values : empty(),
    };
    const out = await session.run(feeds);
    const temperature = Number($(root, ".sf-temperature").value);
    const topK = Number($(root, ".sf-topk").value) || null;
    const topP = Number($(root, ".sf-topp").value) || null;
    const p = nextTokenProbabilities(out.logits.data, temperature, topK, topP);
    let next = 0;
    if (temperature === 0) next = p.indexOf(1);
    else {
      let r = Math.random(), i = 0;
      for (; i < p.length - 1 && r >= p[i]; i++) r -= p[i];
      next = i;
    }
    state.ids = state.ids.concat([next]);
    state.unread = [next];
    if (cache) { state.keys = out.keys; state.values = out.values; }
    else { state.keys = empty(); state.values = empty(); state.unread = state.ids; }
    show(p);
    return true;
  }
  async function run(count) {
    const started = performance.now();
    let made = 0;
    for (; made < count && await step(); made++) { /* one token a step */ }
    const seconds = (performance.now() - started) / 1000;
    const speed = $(root, ".sf-speed");
    speed.textContent = `${made} tokens in ${seconds.toFixed(2)} s: ` +
      `${(made / seconds).toFixed(1)} tokens/s (${$(root, ".sf-cache").checked ? "with" : "without"} the cache)`;
    speed.dataset.tokensPerSecond = String(made / seconds);
  }
  for (const selector of [".sf-prompt", ".sf-sentiment"]) {
    $(root, selector).addEventListener("change", reset);
  }
  $(root, ".sf-cache").addEventListener("change", () => {
    state.keys = empty(); state.values = empty(); state.unread = state.ids;
  });
  $(root, ".sf-reset").addEventListener("click", reset);
  $(root, ".sf-step").addEventListener("click", () => run(1));
  $(root, ".sf-run").addEventListener("click", () => run(Number($(root, ".sf-count").value) || 20));
  reset();
}

async function start() {
  const widgets = [["sf-classifier", classifierWidget], ["sf-gpt", gptWidget]];
  let available = [];
  try {
    const response = await fetch(new URL("index.json", MODELS));
    available = (await response.json()).models || [];
  } catch (err) { /* a site without the index has no models */ }
  for (const [id, make] of widgets) {
    const root = document.getElementById(id);
    if (!root) continue;
    const name = root.dataset.model;
    if (!available.includes(name)) continue;  // the page's instructions stay as they are
    root.classList.add("sf-live");
    make(root, name).catch((err) => {
      $(root, ".sf-status").textContent = `The model could not run here: ${err}`;
    });
  }
}

start();
