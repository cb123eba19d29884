// The models of the pages' boxes, run off the page's main thread: widgets.mjs starts one such
// worker per box when the reader first focuses it. The worker fetches ONNX Runtime Web's
// WebAssembly build (_static/ort/), the model and its tokenizer, reporting the bytes as they
// arrive, then answers the box's messages: a review to classify, or tokens to write, one
// message per token as it is sampled, until the count, a Stop, the end of text or a full context.
import { BPETokenizer, cleanReview, frameTokens, reviewWindows } from "./bpe.mjs";
import { readingParts, readingRows } from "./reading.mjs";
import { generateRefusal, nextTokenProbabilities, readSetting } from "./rules.mjs";

const ROOT = new URL("../../", import.meta.url);  // the site's root: _static/web/ is two below
const ORT = new URL("_static/ort/", ROOT);
const MODELS = new URL("_static/models/", ROOT);

// `url`'s bytes, reporting each chunk's size to `progress` as it arrives.
async function fetchBytes(url, progress) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  const reader = response.body.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.length;
    progress(value.length);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) { bytes.set(chunk, at); at += chunk.length; }
  return bytes;
}

const WASM = "ort-wasm-simd-threaded.wasm";

async function load(name) {
  const base = new URL(`${name}/`, MODELS);
  const manifest = await (await fetch(new URL("manifest.json", base))).json();
  const wasmSize = Number((await fetch(new URL(WASM, ORT), { method: "HEAD" }))
    .headers.get("content-length")) || 0;
  const total = wasmSize + Object.values(manifest.files).reduce((n, f) => n + f.bytes, 0);
  let loaded = 0;
  const progress = (bytes) => { loaded += bytes; postMessage({ type: "progress", loaded, total }); };
  progress(0);
  const [ort, wasm, model, tokenizerBytes] = await Promise.all([
    import(new URL("ort.wasm.min.mjs", ORT).href),
    fetchBytes(new URL(WASM, ORT), progress),
    fetchBytes(new URL("model.onnx", base), progress),
    fetchBytes(new URL("tokenizer.json", base), progress),
  ]);
  ort.env.wasm.wasmPaths = ORT.href;
  ort.env.wasm.wasmBinary = wasm;
  ort.env.wasm.numThreads = 1;  // threads need cross-origin isolation a static site lacks
  ort.env.wasm.proxy = false;   // this worker is already off the main thread
  const tokenizer = new BPETokenizer(JSON.parse(new TextDecoder().decode(tokenizerBytes)));
  const session = await ort.InferenceSession.create(model);
  return { ort, manifest, tokenizer, session };
}

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

// Lets the messages that arrived meanwhile (a Stop) run before the next step.
const CHANNEL = new MessageChannel();
const waiting = [];
CHANNEL.port1.onmessage = () => waiting.shift()();
const yieldToMessages = () => new Promise((resolve) => {
  waiting.push(resolve);
  CHANNEL.port2.postMessage(null);
});

// ---- the classifier -------------------------------------------------------------------
// The heatmap's colours: white to dark blue on the square root of weight / largest weight, as 256
// RGBA pixels ready for an ImageData (little-endian: 0xAABBGGRR). widgets.mjs draws the legend.
const LIGHT = [247, 251, 255], DARK = [8, 48, 107];
const PALETTE = Uint32Array.from({ length: 256 }, (_, i) => {
  const [r, g, b] = LIGHT.map((c, j) => Math.round(c + (DARK[j] - c) * i / 255));
  return ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0;
});
const LABELLED_AXES = 24;  // at most this many tokens get their text on the heatmap's axes
// Each token's part (chapter 11's `reading_contributions`) costs two more runs of the model: the
// box works them out for reviews of up to this many tokens, this many rows to a run.
const READING_LIMIT = 1024;
const READING_ROWS = 16;

function classifier({ ort, manifest, tokenizer, session }) {
  const record = tokenizer.record;
  const framing = record.framing;
  const { num_layers: layers, num_heads: heads } = manifest.config;
  let canvas = null, last = null;
  const view = { layer: 0, head: 0, window: 0, side: 0, ratio: 1 };

  async function classify({ text }) {
    const started = performance.now();
    const cleaned = cleanReview(text, record);
    if (cleaned.trim() === "") { last = null; postMessage({ type: "verdict", empty: true }); return; }
    const body = tokenizer.encodeOrdinary(cleaned);
    if (framing.truncation === "windows") { await classifyWindows(body, started); return; }
    const ids = frameTokens(body, framing);
    const budget = framing.max_len - 2;
    const dropped = Math.max(0, body.length - budget);
    const head = framing.truncation === "head" ? budget : Math.floor(budget / 4);
    const out = await session.run({
      ids: new ort.Tensor("int64", BigInt64Array.from(ids, BigInt), [1, ids.length]) });
    const real = ids.indexOf(framing.sep) + 1;
    const labels = ids.slice(0, real).map((id) => tokenText(tokenizer, id));
    last = { attention: out.attention.data, length: ids.length, windows: [{ real, labels }] };  // (1, L, H, T, T)
    postMessage({
      type: "verdict", ids, real, probability: out.probabilities.data[1], labels,
      bodyTokens: body.length, dropped,
      // the position in the framed ids where the dropped tokens were: after [CLS] and the head
      cutAt: dropped && framing.truncation !== "head" ? 1 + head : null,
      milliseconds: performance.now() - started,
    });
    draw();
    await reading([{ tokens: ids.slice(1, real - 1), at: 1, share: 1 }], real - 2);
  }

  // Each token's part of the verdict against the empty review (`readingParts`), for frames of
  // {tokens read, where they start among the labels shown, the frame's share of the gap}: the
  // rows of all the frames, READING_ROWS to a run, letting the messages that arrived meanwhile
  // in between; a newer review stops the work. Posts the parts, one per label (null for [CLS]
  // and [SEP], which the baseline holds), the baseline and the gap they sum to.
  async function reading(frames, count) {
    const started = performance.now();
    if (count > READING_LIMIT) {
      postMessage({ type: "parts", skipped: true, tokens: count, limit: READING_LIMIT });
      return;
    }
    const head = { ...framing, truncation: "head" };  // a row fits a frame: nothing is cut
    const perFrame = frames.map(({ tokens }) => readingRows(tokens).map((row) => frameTokens(row, head)));
    const rows = perFrame.flat();
    const gaps = new Float64Array(rows.length);
    for (let at = 0; at < rows.length; at += READING_ROWS) {
      const chunk = rows.slice(at, at + READING_ROWS);
      const out = await session.run({ ids: new ort.Tensor("int64", BigInt64Array.from(chunk.flat(), BigInt),
                                                          [chunk.length, framing.max_len]) },
                                    ["probabilities"]);
      const p = out.probabilities.data;  // (rows, 2)
      for (let r = 0; r < chunk.length; r++) gaps[at + r] = Math.log(p[2 * r + 1]) - Math.log(p[2 * r]);
      postMessage({ type: "parts-progress", done: at + chunk.length, total: rows.length });
      await yieldToMessages();
      if (queue.some((message) => message.type === "classify")) return;  // a newer review waits
    }
    const parts = [];
    let baseline = 0, gap = 0, row = 0;
    frames.forEach(({ tokens, at, share }, f) => {
      const frame = readingParts(gaps.subarray(row, row + perFrame[f].length), tokens.length);
      row += perFrame[f].length;
      while (parts.length < at) parts.push(null);  // [CLS], and the [SEP] before it
      parts.push(...frame.parts.map((part) => part * share));
      baseline += share * frame.baseline;
      gap += share * frame.gap;
    });
    postMessage({ type: "parts", parts, baseline, gap, rows: rows.length,
                  milliseconds: performance.now() - started });
  }

  // A model that reads the whole review in windows (truncation "windows"): the K windows in one
  // batch; the review's logit gap is the windows' gaps averaged with weights n_w / N (n_w the
  // real tokens of window w, its [CLS] and [SEP] included, N their sum), and each token's part
  // is its part in its window times n_w / N, so that the parts of all the tokens shown still
  // sum, with the empty review's gap, to that gap.
  async function classifyWindows(body, started) {
    const windows = reviewWindows(body, framing);
    const count = windows.length, length = framing.max_len;
    const flat = BigInt64Array.from(windows.flat(), BigInt);
    const out = await session.run({ ids: new ort.Tensor("int64", flat, [count, length]) });
    const p = out.probabilities.data;  // (K, 2)
    const reals = windows.map((ids) => ids.indexOf(framing.sep) + 1);
    const total = reals.reduce((n, real) => n + real, 0);
    let gap = 0;
    for (let w = 0; w < count; w++) gap += reals[w] * (Math.log(p[2 * w + 1]) - Math.log(p[2 * w])) / total;
    const probability = gap >= 0 ? 1 / (1 + Math.exp(-gap)) : Math.exp(gap) / (1 + Math.exp(gap));
    const labels = [], starts = [];
    const shown = windows.map((ids, w) => {
      const real = reals[w];
      const labelled = ids.slice(0, real).map((id) => tokenText(tokenizer, id));
      starts.push(labels.length);
      labels.push(...labelled);
      return { real, labels: labelled };
    });
    last = { attention: out.attention.data, length, windows: shown };  // (K, L, H, T, T)
    postMessage({
      type: "verdict", ids: windows, windows: count, windowTokens: reals, windowStarts: starts,
      probability, gap, labels, bodyTokens: body.length, dropped: 0, cutAt: null,
      milliseconds: performance.now() - started,
    });
    draw();
    // each window's parts count for the review as its logit gap does: n_w / N
    await reading(windows.map((ids, w) => ({ tokens: ids.slice(1, reals[w] - 1), at: starts[w] + 1,
                                             share: reals[w] / total })), body.length);
  }

  // The (real, real) weights of one head of one layer, for the window on show.
  function weightsOf(window, layer, head) {
    const { attention, length } = last;
    const { real } = last.windows[window];
    const out = new Float32Array(real * real);
    const offset = ((window * layers + layer) * heads + head) * length * length;
    for (let q = 0; q < real; q++) {
      out.set(attention.subarray(offset + q * length, offset + q * length + real), q * real);
    }
    return out;
  }

  // The heatmap of the chosen head (and window), drawn here on the canvas the page handed over,
  // so that the page's main thread never rasterizes it; the page gets what goes with the picture.
  function draw() {
    if (!last || !view.side) return;
    const { layer, head, side } = view;
    const windows = last.windows.length;
    const window = Math.min(Math.max(0, view.window), windows - 1);
    const { real, labels } = last.windows[window];
    const weights = weightsOf(window, layer, head);
    let largest = 1e-9;
    for (let i = 0; i < weights.length; i++) if (weights[i] > largest) largest = weights[i];
    const axes = real <= LABELLED_AXES;
    const margin = axes ? Math.min(72, Math.round(side / 4)) : 0;
    const cell = (side - margin) / real;
    if (canvas) paint(weights, largest, margin, cell, real, labels);
    // each head of this layer: the five tokens it attends to most, on average over the rows
    const tops = [];
    for (let h = 0; h < heads; h++) {
      const w = h === head ? weights : weightsOf(window, layer, h);
      const received = new Float64Array(real);
      for (let q = 0; q < real; q++) for (let k = 0; k < real; k++) received[k] += w[q * real + k] / real;
      tops.push(Array.from(received.keys()).sort((a, b) => received[b] - received[a]).slice(0, 5)
        .map((k) => ({ label: labels[k], weight: received[k] })));
    }
    postMessage({ type: "drawn", layer, head, window, windows, real, largest, side, margin, cell,
                  tops, labels, weights }, [weights.buffer]);
  }

  function paint(weights, largest, margin, cell, real, labels) {
    const { side, ratio } = view;
    const axes = margin > 0;
    if (canvas.width !== Math.round(side * ratio)) canvas.width = canvas.height = Math.round(side * ratio);
    const context = canvas.getContext("2d");
    context.setTransform(ratio, 0, 0, ratio, 0, 0);
    context.clearRect(0, 0, side, side);
    const pixels = new ImageData(real, real);  // one pixel a cell, scaled up without smoothing
    const colours = new Uint32Array(pixels.data.buffer);
    for (let i = 0; i < weights.length; i++) colours[i] = PALETTE[Math.round(255 * Math.sqrt(weights[i] / largest))];
    const small = new OffscreenCanvas(real, real);
    small.getContext("2d").putImageData(pixels, 0, 0);
    context.imageSmoothingEnabled = false;
    context.drawImage(small, margin, margin, real * cell, real * cell);
    if (axes) {
      context.fillStyle = "#222";
      context.font = `${Math.max(9, Math.min(12, cell * 0.8))}px sans-serif`;
      context.textBaseline = "middle";
      const short = (label) => (label.length > 9 ? label.slice(0, 8) + "…" : label).replace(/\s/g, "·");
      context.textAlign = "right";
      labels.forEach((label, i) => context.fillText(short(label), margin - 3, margin + (i + 0.5) * cell));
      context.save();
      context.rotate(-Math.PI / 2);
      context.textAlign = "left";
      labels.forEach((label, i) => context.fillText(short(label), -margin + 3, margin + (i + 0.5) * cell));
      context.restore();
    }
  }

  return {
    classify,
    view(message) {
      if (message.canvas) canvas = message.canvas;
      if (message.view) Object.assign(view, message.view);
      draw();
    },
  };
}

// ---- the GPT --------------------------------------------------------------------------
function gpt({ ort, manifest, tokenizer, session }) {
  const { num_layers: layers, num_heads: heads, context_length: contextLength } = manifest.config;
  const specials = tokenizer.specialIds;
  const specialNames = new Map(Object.entries(specials).map(([token, id]) => [id, token]));
  const empty = () => new ort.Tensor("float32", new Float32Array(0),
                                     [layers, 1, heads, 0, manifest.head_dim]);
  let state = null;
  let stopRequested = false;
  let running = false;

  // The text the ids stand for: after the end-of-text token (and sentiment token) put first,
  // up to the first special token the model wrote.
  function shownText() {
    const written = state.ids.slice(state.prefix);
    const end = written.findIndex((id) => specialNames.has(id));
    return state.promptText + tokenizer.decode(end < 0 ? written : written.slice(0, end));
  }
  function post(type, extra) {
    postMessage({ type, ids: state.ids, promptLength: state.prefix, text: shownText(),
                  contextLength, ...extra });
  }

  function reset({ prompt, sentiment }) {
    const prefix = [specials["<|endoftext|>"]];
    if (sentiment) prefix.push(specials[sentiment]);
    const promptIds = tokenizer.encodeOrdinary(prompt);
    const ids = prefix.concat(promptIds);
    state = { ids, unread: ids, keys: empty(), values: empty(), prefix: ids.length,
              promptText: prompt, ended: null };
    post("reset");
  }

  async function step(useCache, temperature, topK, topP) {
    const input = useCache ? state.unread : state.ids;
    const out = await session.run({
      ids: new ort.Tensor("int64", BigInt64Array.from(input, BigInt), [1, input.length]),
      past_keys: useCache ? state.keys : empty(), past_values: useCache ? state.values : empty(),
    });
    const p = nextTokenProbabilities(out.logits.data, temperature, topK, topP);
    let next = 0;
    if (temperature === 0) next = p.indexOf(1);
    else {
      let r = Math.random(), i = 0;
      for (; i < p.length - 1 && r >= p[i]; i++) r -= p[i];
      next = i;
    }
    return { next, p, keys: out.keys, values: out.values };
  }

  function top(p) {
    return Array.from(p.keys()).filter((id) => p[id] > 0)
      .sort((a, b) => p[b] - p[a]).slice(0, 10)
      .map((id) => ({ label: specialNames.get(id) || tokenText(tokenizer, id), p: p[id] }));
  }

  // The settings of a run, checked as `generate` checks them: [count, temperature, top-k,
  // top-p] as numbers (or null: off), or null after posting the refusal.
  function checked({ count, temperature, topK, topP }) {
    if (state.ended) {
      post("refused", { message: `The review already ended: the model wrote ${state.ended}. ` +
                                 "Reset to start another.",
                        chinese: `这篇影评已经结束：模型写出了 ${state.ended}。点“重置”开始另一篇。` });
      return null;
    }
    const settings = [readSetting(temperature, false), readSetting(topK, true),
                      readSetting(topP, true)];
    const wanted = readSetting(count, false);
    const refused = generateRefusal(state.ids.length, wanted, contextLength, ...settings);
    if (refused) {
      const full = state.ids.length >= contextLength;
      post("refused", { message: refused.english, chinese: refused.chinese, contextFull: full });
      return null;
    }
    return [wanted.value, ...settings.map((s) => s.value)];
  }

  // Writes up to `count` tokens, with or without the cache, posting each as it is drawn, until
  // the count, a Stop or a special token (unless `throughEnd`, as chapter 12's `generate` writes
  // its count whatever it draws; the text shown still stops at the first): {made, seconds, why}.
  async function write(count, useCache, t, k, p, throughEnd = false) {
    const started = performance.now();
    let made = 0, why = "count";
    while (made < count) {
      await yieldToMessages();
      if (stopRequested) { why = "stopped"; break; }
      const result = await step(useCache, t, k, p);
      await yieldToMessages();
      if (stopRequested) { why = "stopped"; break; }  // a token sampled after Stop is dropped
      state.ids = state.ids.concat([result.next]);
      if (useCache) { state.unread = [result.next]; state.keys = result.keys; state.values = result.values; }
      else { state.unread = state.ids; state.keys = empty(); state.values = empty(); }
      made++;
      if (specialNames.has(result.next) && !state.ended) {
        state.ended = specialNames.get(result.next);
        why = "ended";
      }
      post("token", { made, top: top(result.p) });
      if (why === "ended" && !throughEnd) break;
    }
    return { made, seconds: (performance.now() - started) / 1000, why };
  }

  async function run(message) {
    if (running) return;
    const settings = checked(message);
    if (!settings) return;
    const [count, t, k, p] = settings;
    running = true;
    stopRequested = false;
    post("started", { count, useCache: message.cache });
    let result;
    try {
      result = await write(count, message.cache, t, k, p);
    } finally {
      running = false;
    }
    post("finished", { ...result, ended: state.ended, useCache: message.cache,
                       contextFull: state.ids.length >= contextLength });
  }

  // The cache's worth, timed on the same work: writes `count` tokens with the cache, past an
  // end of text if one is drawn (a timing times the work, as `generate` does), then, from the
  // same start, reads them again without it, the whole text at every step, as Run without the
  // cache would (the tokens written are fed back, not drawn again).
  async function compare(message) {
    if (running) return;
    const settings = checked(message);
    if (!settings) return;
    const [count, t, k, p] = settings;
    running = true;
    stopRequested = false;
    const start = state.ids;
    post("started", { count, useCache: true, comparing: true });
    let cached, replayed = 0, seconds = 0;
    try {
      cached = await write(count, true, t, k, p, true);
      const written = state.ids.slice(start.length);
      post("replaying", { count: written.length });
      const begun = performance.now();
      const none = empty();
      while (replayed < written.length && !stopRequested) {
        const ids = start.concat(written.slice(0, replayed));
        await session.run({ ids: new ort.Tensor("int64", BigInt64Array.from(ids, BigInt), [1, ids.length]),
                            past_keys: none, past_values: none });
        replayed++;
        post("replayed", { replayed });
        await yieldToMessages();
      }
      seconds = (performance.now() - begun) / 1000;
    } finally {
      running = false;
    }
    post("compared", { made: cached.made, cachedSeconds: cached.seconds, replayed,
                       uncachedSeconds: seconds, before: start.length, why: cached.why,
                       stopped: stopRequested, ended: state.ended,
                       contextFull: state.ids.length >= contextLength });
  }

  return {
    reset, run, compare,
    stop() { stopRequested = true; },
    cache() { state.keys = empty(); state.values = empty(); state.unread = state.ids; },
  };
}

let handlers = null;
const queue = [];  // messages that wait for the model, or for the message before them
let busy = false;
async function handle(message) {
  if (message.type === "load") {
    const model = await load(message.model);
    handlers = model.manifest.kind === "gpt" ? gpt(model) : classifier(model);
    postMessage({ type: "ready", manifest: model.manifest });
  } else {
    await handlers[message.type](message);
  }
}
onmessage = async (event) => {
  if (event.data.type === "stop") { handlers?.stop?.(); return; }  // at once, even mid-run
  queue.push(event.data);
  if (busy) return;
  busy = true;
  while (queue.length) {
    try {
      await handle(queue.shift());
    } catch (err) {
      postMessage({ type: "error", message: String(err) });
    }
  }
  busy = false;
};
