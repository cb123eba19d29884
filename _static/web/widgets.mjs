// The boxes of the appendix "Running the models in the browser": the classifier and the GPT
// that `scratchformer export-web` wrote into _static/models/. This module is all a page loads
// before the reader touches a box (it and two small JSON files); the first focus on a box
// starts a worker (worker.mjs) that fetches ONNX Runtime Web's WebAssembly build from
// _static/ort/, the model and its tokenizer, with a progress bar, and runs the model off the
// page's main thread. Nothing is fetched from anywhere but this site. Which models the site has
// is in _static/models/index.json, written by the build; without them the page says how to export.
const ROOT = new URL("../../", import.meta.url);  // the site's root: _static/web/ is two below
const MODELS = new URL("_static/models/", ROOT);
const RUNTIME = new URL("_static/ort/ort-wasm-simd-threaded.wasm", ROOT);

const $ = (root, selector) => root.querySelector(selector);
// The box speaks the page's language: the Chinese edition's pages are lang="zh-CN" (their
// static words come from the box's .zh_CN.html twin). The numbers are the same in both.
const CHINESE = document.documentElement.lang.startsWith("zh");
const say = (english, chinese) => (CHINESE ? chinese : english);
const tokenCount = (n) => `${n} token${n === 1 ? "" : "s"}`;
const megabytes = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;
const quoted = (label) => `“${label}”`;
const signed = (x, digits) => `${x >= 0 ? "+" : "−"}${Math.abs(x).toFixed(digits)}`;

// Starts the box's worker on the reader's first focus (or press) inside it; `onMessage` gets
// the worker's messages once the model is ready, `onReady` the model's manifest.
function loadOnFirstFocus(root, name, onReady, onMessage) {
  const status = $(root, ".sf-status");
  const bar = $(root, ".sf-loading");
  let worker = null;
  const start = () => {
    if (worker) return;
    root.dataset.state = "loading";
    status.textContent = say("Loading the model…", "正在加载模型…");
    bar.hidden = false;
    worker = new Worker(new URL("./worker.mjs", import.meta.url), { type: "module" });
    worker.onmessage = ({ data }) => {
      if (data.type === "progress") {
        bar.max = data.total;
        bar.value = data.loaded;
        status.textContent = say(`Loading the model: ${megabytes(data.loaded)} of ${megabytes(data.total)}…`,
          `正在加载模型：${megabytes(data.loaded)} / ${megabytes(data.total)}…`);
      } else if (data.type === "ready") {
        bar.hidden = true;
        root.dataset.state = "ready";
        onReady(data.manifest, worker);
      } else if (data.type === "error") {
        bar.hidden = true;
        status.textContent = say("The model could not run here: ", "模型无法在这里运行：") + data.message;
        root.dataset.state = "failed";
      } else {
        onMessage(data);
      }
    };
    worker.onerror = (event) => {
      status.textContent = say("The model could not run here: ", "模型无法在这里运行：") +
        (event.message || say("the worker failed", "worker 出错"));
      root.dataset.state = "failed";
    };
    worker.postMessage({ type: "load", model: name });
  };
  root.addEventListener("focusin", start);
  root.addEventListener("pointerdown", start);
}

// What the box says before it loads: how much it will fetch, read from the model's manifest
// and the runtime's size (a HEAD request: no body).
async function announce(root, name) {
  const manifest = await (await fetch(new URL(`${name}/manifest.json`, MODELS))).json();
  const model = Object.values(manifest.files).reduce((n, file) => n + file.bytes, 0);
  const runtime = Number((await fetch(RUNTIME, { method: "HEAD" })).headers.get("content-length"));
  if (root.dataset.state === "waiting") {
    $(root, ".sf-status").textContent = say(
      "Click or tab into this box to load the model " +
        `(${megabytes(model)}` + (runtime ? `, and ${megabytes(runtime)} for ONNX Runtime` : "") + ").",
      `点击或用 Tab 键进入此框即可加载模型（${megabytes(model)}` +
        (runtime ? `，另有 ONNX Runtime ${megabytes(runtime)}` : "") + "）。");
  }
}

function modelLine(manifest) {
  const score = manifest.kind === "gpt"
    ? (manifest.bits_per_byte != null ? say(`, ${manifest.bits_per_byte.toFixed(3)} bits per byte on held-out reviews`,
                                            `，在留出的影评上每字节 ${manifest.bits_per_byte.toFixed(3)} 比特`) : "")
    : (manifest.test_accuracy != null ? say(`, test accuracy ${(100 * manifest.test_accuracy).toFixed(2)}%`,
                                            `，测试准确率 ${(100 * manifest.test_accuracy).toFixed(2)}%`) : "");
  return say(`Model ${manifest.checkpoint.sha256.slice(0, 12)}…${score}.`,
             `模型 ${manifest.checkpoint.sha256.slice(0, 12)}…${score}。`);
}

// ---- the classifier -------------------------------------------------------------------
// The heatmap's colours, white to dark blue on the square root of weight / largest weight (the
// worker draws the heatmap itself, on the canvas handed to it; this is for the scale's legend).
const LIGHT = [247, 251, 255], DARK = [8, 48, 107];
const shade = (s) => LIGHT.map((c, i) => Math.round(c + (DARK[i] - c) * s));
const SCALE = `linear-gradient(to right, ${[0, 0.25, 0.5, 0.75, 1].map((s) => `rgb(${shade(s).join(",")})`).join(", ")})`;
// A contribution's strength as one of ten background shades (classes, so that 256 tokens share
// ten styles), light enough that black text keeps a contrast of 7:1 at the strongest.
const LEVELS = 10;

function classifierWidget(root, name) {
  const review = $(root, ".sf-review");
  const verdict = $(root, ".sf-verdict");
  const canvas = $(root, ".sf-heatmap");
  let worker = null, inFlight = false, again = false, width = 0, hover = null, shownWindow = 0;
  let rendering = 0;  // the verdicts shown so far: a newer one stops the tokens of an older
  let asked = "";  // the text of the verdict in flight
  let sent = 0;  // reviews sent to the worker, which answers each with a verdict, then its parts
  let spans = [], shownTokens = Promise.resolve(true), shownLabels = [];

  function classify() {
    if (!worker) return;
    root.dataset.pending = "true";
    if (inFlight) { again = true; return; }  // one review at a time; the newest text next
    inFlight = true;
    again = false;
    asked = review.value;
    sent++;
    worker.postMessage({ type: "classify", text: asked });
  }

  // The box has settled when the verdict and the parts on show are for the text in the box.
  function settle(render) {
    shownTokens.then((current) => {
      if (current !== false && render === rendering && !inFlight && !again && render === sent) {
        root.dataset.pending = "false";
      }
    });
  }

  function showVerdict(result) {
    const render = ++rendering;
    verdict.dataset.runs = String(Number(verdict.dataset.runs || 0) + 1);
    const truncation = $(root, ".sf-truncation");
    if (result.empty) {
      verdict.textContent = say("No verdict: the box is empty. Type or paste a review above.",
                                "没有判断：框是空的。请在上面输入或粘贴一篇影评。");
      delete verdict.dataset.probability;
      verdict.dataset.ids = "[]";
      truncation.textContent = "";
      delete truncation.dataset.dropped;
      $(root, ".sf-tokens").replaceChildren();
      $(root, ".sf-pushes").replaceChildren();
      $(root, ".sf-parts").textContent = "";
      $(root, ".sf-attention").hidden = true;
      spans = [];
      shownTokens = Promise.resolve(true);
      return;
    }
    const { probability, ids, real, labels, dropped, cutAt } = result;
    const windows = result.windows || 1;  // a model that reads in windows says how many
    verdict.textContent = `${probability >= 0.5 ? say("positive", "正面") : say("negative", "负面")}` +
      say(": ", "：") + `P(positive) = ${probability.toFixed(4)} ${say("(", "（")}` +
      (windows > 1 ? say(`${windows} windows, `, `${windows} 个窗口，`) : "") +
      `${result.milliseconds.toFixed(0)} ms${say(")", "）")}` +
      // the model learned from English reviews: a text without a Latin letter gets a verdict all
      // the same, and this note
      (/[A-Za-z]/.test(asked) ? "" : say(
        " The model reads English reviews only: this text has no Latin letter, so its verdict means little.",
        "模型只读英文影评：这段文字没有拉丁字母，所以这个判断没有什么意义。"));
    verdict.dataset.probability = String(probability);
    verdict.dataset.ids = JSON.stringify(ids);
    if (dropped) {
      const head = cutAt - 1, tail = real - 2 - head;
      truncation.textContent = say(
        `This review is ${result.bodyTokens.toLocaleString("en")} tokens; ` +
          `the model reads ${(real - 2).toLocaleString("en")}: the first ${head} and the last ${tail}. ` +
          `The ${dropped.toLocaleString("en")} tokens between them are dropped (marked ⋯ below).`,
        `这篇影评有 ${result.bodyTokens} 个词元；模型读其中 ${real - 2} 个：前 ${head} 个和后 ${tail} 个。` +
          `中间的 ${dropped} 个词元被丢弃（下面用 ⋯ 标出）。`);
      truncation.dataset.dropped = String(dropped);
    } else {
      truncation.textContent = "";
      delete truncation.dataset.dropped;
    }
    if (windows > 1) {
      const full = result.windowTokens[0] - 2, lastOne = result.windowTokens[windows - 1] - 2;
      truncation.textContent = say(
        `This review is ${result.bodyTokens.toLocaleString("en")} tokens; ` +
          `the model reads all of them, in ${windows} windows of ${full} tokens` +
          (lastOne < full ? ` (the last ${lastOne})` : "") + `, each framed by [CLS] and [SEP]. ` +
          "The verdict averages the windows' logits, each weighted by its share of the tokens, " +
          "and each token's contribution below is scaled by its window's share.",
        `这篇影评有 ${result.bodyTokens} 个词元；模型全部读完，分成 ${windows} 个窗口，每个 ${full} 个词元` +
          (lastOne < full ? `（最后一个 ${lastOne} 个）` : "") + "，每个窗口都由 [CLS] 和 [SEP] 框起。" +
          "判断是各窗口 logits 的平均，每个窗口按它所占的词元份额加权；下面每个词元的贡献也按它所在窗口的份额缩放。");
      truncation.dataset.windows = String(windows);
    } else {
      delete truncation.dataset.windows;
    }
    windowControl(windows);
    // The tokens, uncoloured until their parts come (showParts); [CLS] and [SEP] stay so: the
    // baseline holds them.
    const spansOf = (from, to) => labels.slice(from, to).map((label, j) => {
      const span = document.createElement("span");
      span.textContent = label;
      span.className = /^\[(CLS|SEP)\]$/.test(label) ? "sf-frame" : "sf-token";
      spans[from + j] = span;
      return span;
    });
    spans = new Array(labels.length);
    shownLabels = labels;
    let settled = true;
    if (windows > 1) {
      settled = showWindows(render, windows, result.windowStarts.concat([labels.length]), spansOf);
    } else {
      const shown = spansOf(0, labels.length);
      if (cutAt !== null) {
        const marker = document.createElement("span");
        marker.className = "sf-cut";
        marker.textContent = say(`⋯ ${dropped.toLocaleString("en")} tokens dropped ⋯`, `⋯ 丢弃了 ${dropped} 个词元 ⋯`);
        shown.splice(cutAt, 0, marker);
      }
      $(root, ".sf-tokens").replaceChildren(...shown);
    }
    shownTokens = Promise.resolve(settled);
    const parts = $(root, ".sf-parts");
    parts.textContent = say("Working out each token's part…", "正在计算每个词元的份额…");
    for (const key of ["baseline", "sum", "gap"]) delete parts.dataset[key];
    $(root, ".sf-pushes").replaceChildren();
    $(root, ".sf-attention").hidden = false;
  }

  // Each token's part of the verdict against the empty review (worker.mjs, `reading`): its colour
  // (green and underlined towards positive, red and dotted towards negative, one of ten shades
  // by its size against the largest), its number on hover, the five largest each way in words,
  // and the sum with the baseline.
  function showParts(data, render) {
    const line = $(root, ".sf-parts");
    if (data.skipped) {
      line.textContent = say(`Each token's part costs two more runs of the model: the box works them ` +
        `out for reviews of up to ${data.limit.toLocaleString("en")} tokens, and this one has ` +
        `${data.tokens.toLocaleString("en")}.`,
        `每个词元的份额要再运行模型两次：这个框只为不超过 ${data.limit} 个词元的影评计算，` +
        `而这篇有 ${data.tokens} 个。`);
      return;
    }
    const { parts, baseline, gap } = data;
    let biggest = 1e-9, sum = 0;
    for (const part of parts) if (part != null) { biggest = Math.max(biggest, Math.abs(part)); sum += part; }
    shownTokens.then((current) => {
      if (current === false || render !== rendering) return;
      parts.forEach((part, i) => {
        if (part == null || !spans[i]) return;
        const level = Math.round(LEVELS * Math.abs(part) / biggest);
        spans[i].className = `${part >= 0 ? "sf-up" : "sf-down"} sf-level-${level}`;
        spans[i].title = signed(part, 4);
        spans[i].dataset.contribution = String(part);
      });
    });
    line.textContent = say(`Parts against the empty review: its logit gap ${signed(baseline, 3)} (the ` +
      `baseline) + the tokens' parts ${signed(sum, 3)} = ${signed(gap, 3)}, this review's logit gap, ` +
      "log P(positive) − log P(negative).",
      `相对于空影评的份额：空影评的 logit 差 ${signed(baseline, 3)}（基线）+ 各词元的份额 ` +
      `${signed(sum, 3)} = ${signed(gap, 3)}，即这篇影评的 logit 差 log P(positive) − log P(negative)。`);
    Object.assign(line.dataset, { baseline: String(baseline), sum: String(sum), gap: String(gap) });
    const order = parts.map((part, i) => i).filter((i) => parts[i] != null);
    const strongest = (sign) => order.filter((i) => sign * parts[i] > 0)
      .sort((a, b) => sign * (parts[b] - parts[a])).slice(0, 5)
      .map((i) => `${quoted(shownLabels[i])} ${signed(parts[i], 3)}`).join(", ") || say("none", "无");
    $(root, ".sf-pushes").replaceChildren(
      Object.assign(document.createElement("li"), { textContent: say("Towards positive: ", "推向正面：") + strongest(1) }),
      Object.assign(document.createElement("li"), { textContent: say("Towards negative: ", "推向负面：") + strongest(-1) }));
  }

  // The tokens of a review read in windows, a block for each window that begins by naming it.
  // A long review has thousands of tokens: one window goes on the page per task, so that the
  // page answers between them, and the browser lays out only the windows in view
  // (content-visibility). Resolves true once every window is shown, false if a newer verdict
  // took the box meanwhile.
  function showWindows(render, windows, starts, spansOf) {
    const tokens = $(root, ".sf-tokens");
    tokens.replaceChildren();
    return new Promise((resolve) => {
      let w = 0;
      const next = () => {
        if (render !== rendering) { resolve(false); return; }
        const block = document.createElement("div");
        block.className = "sf-window-tokens";
        const marker = document.createElement("span");
        marker.className = "sf-boundary";
        marker.textContent = say(`window ${w + 1} of ${windows}:`, `第 ${w + 1} 个窗口（共 ${windows} 个）：`);
        block.append(marker, ...spansOf(starts[w], starts[w + 1]));
        tokens.append(block);
        if (++w < windows) setTimeout(next, 0);
        else resolve(true);
      };
      next();
    });
  }

  // The heatmap shows one window of a review read in windows: a control to choose it, there
  // only while the review has more than one (the first by default; the reader's choice stays
  // while the review still has that window).
  function windowControl(windows) {
    let field = $(root, ".sf-window-field");
    if (windows <= 1) {
      field?.remove();
      if (shownWindow !== 0) view();
      return;
    }
    if (!field) {
      field = document.createElement("label");
      field.className = "sf-window-field";
      field.append(say("window ", "窗口 "), document.createElement("select"));
      field.lastChild.className = "sf-window";
      field.lastChild.addEventListener("change", view);
      $(root, ".sf-head").parentElement.after(" ", field);
    }
    const select = $(field, ".sf-window");
    const chosen = Math.min(Number(select.value) || 0, windows - 1);
    if (select.options.length !== windows) {
      select.replaceChildren(...Array.from({ length: windows },
        (_, w) => new Option(say(`${w + 1} of ${windows}`, `${w + 1} / ${windows}`), String(w))));
    }
    select.value = String(chosen);
    if (chosen !== shownWindow) view();  // the worker already draws the window it was showing
  }

  // What the worker drew: the words that go with the picture (its text alternative, the scale,
  // each head's most attended tokens) and the cells' weights for the hover line.
  function showDrawn(drawn) {
    const { layer, head, real, largest, side, tops, window, windows } = drawn;
    const which = windows > 1 ? say(` in window ${window + 1} of ${windows}`, `（第 ${window + 1} 个窗口，共 ${windows} 个）`) : "";
    canvas.style.width = canvas.style.height = `${side}px`;
    canvas.setAttribute("aria-label", say(
      `Attention weights of layer ${layer + 1}, head ${head + 1} over ${real} tokens${which}: each row is ` +
        `a token that looks, each column a token it looks at, darker for a larger weight (up to ` +
        `${largest.toFixed(3)}). The list below names each head's most attended tokens.`,
      `第 ${layer + 1} 层第 ${head + 1} 个头在 ${real} 个词元上的注意力权重${which}：每行是一个去看的词元，` +
        `每列是它看向的词元，权重越大颜色越深（最大 ${largest.toFixed(3)}）。下面的列表列出每个头最受关注的词元。`));
    $(root, ".sf-scale-mid").textContent = (largest / 4).toFixed(3);
    $(root, ".sf-scale-max").textContent = largest.toFixed(3);
    $(root, ".sf-top-layer").textContent = String(layer + 1);
    $(root, ".sf-top").replaceChildren(...tops.map((top, h) => Object.assign(document.createElement("li"), {
      textContent: say(`Head ${h + 1}: `, `第 ${h + 1} 个头：`) + top.map(({ label, weight }) => `${quoted(label)} ${weight.toFixed(3)}`).join(", "),
    })));
    hover = drawn;
  }

  function view() {
    shownWindow = Number($(root, ".sf-window")?.value || 0);
    worker?.postMessage({ type: "view", view: {
      layer: Number($(root, ".sf-layer").value), head: Number($(root, ".sf-head").value),
      window: shownWindow,
      side: Math.max(120, Math.min(480, Math.floor(width))), ratio: window.devicePixelRatio || 1 } });
  }

  canvas.addEventListener("mousemove", (event) => {
    if (!hover) return;
    const box = canvas.getBoundingClientRect();
    const scale = box.width / hover.side;
    const x = (event.clientX - box.left) / scale - hover.margin;
    const y = (event.clientY - box.top) / scale - hover.margin;
    const k = Math.floor(x / hover.cell), q = Math.floor(y / hover.cell);
    if (q < 0 || k < 0 || q >= hover.real || k >= hover.real) return;
    const weight = hover.weights[q * hover.real + k].toFixed(3);
    $(root, ".sf-hover").textContent = say(
      `${quoted(hover.labels[q])} (token ${q + 1}) looks at ${quoted(hover.labels[k])} (token ${k + 1}) with weight ${weight}`,
      `${quoted(hover.labels[q])}（第 ${q + 1} 个词元）以权重 ${weight} 看向 ${quoted(hover.labels[k])}（第 ${k + 1} 个词元）`);
  });

  loadOnFirstFocus(root, name, (manifest, ready) => {
    worker = ready;
    const { num_layers: layers, num_heads: heads } = manifest.config;
    for (const [select, count] of [[$(root, ".sf-layer"), layers], [$(root, ".sf-head"), heads]]) {
      for (let i = 0; i < count; i++) select.add(new Option(String(i + 1), String(i)));
    }
    $(root, ".sf-scale-bar").style.background = SCALE;
    if (canvas.transferControlToOffscreen) {
      const offscreen = canvas.transferControlToOffscreen();
      worker.postMessage({ type: "view", canvas: offscreen }, [offscreen]);
    } else {
      canvas.hidden = true;  // a browser without OffscreenCanvas gets the words, not the picture
    }
    view();
    $(root, ".sf-status").textContent = modelLine(manifest);
    classify();
  }, (data) => {
    if (data.type === "drawn") { showDrawn(data); return; }
    if (data.type === "parts-progress") {
      $(root, ".sf-parts").textContent = say(`Working out each token's part: ${data.done} of ${data.total} runs…`,
        `正在计算每个词元的份额：已运行 ${data.total} 次中的 ${data.done} 次…`);
      return;
    }
    if (data.type === "parts") {
      showParts(data, rendering);
      settle(rendering);
      return;
    }
    if (data.type !== "verdict") return;
    inFlight = false;
    showVerdict(data);  // a review read in windows: its tokens are shown a window at a time
    if (again) { classify(); return; }
    if (data.empty) settle(rendering);  // an empty box gets no parts
  });
  review.addEventListener("input", classify);
  // The page's buttons that put a text in the box (chapter 11 lists the model's errors so).
  for (const button of document.querySelectorAll(".sf-try")) {
    button.addEventListener("click", () => {
      review.value = button.dataset.text;
      review.focus();  // loads the model, the first time
      classify();
    });
  }
  $(root, ".sf-layer").addEventListener("change", view);
  $(root, ".sf-head").addEventListener("change", view);
  new ResizeObserver(([entry]) => {
    if (!entry.contentRect.width) return;  // hidden: keep the last width
    width = entry.contentRect.width;
    view();
  }).observe($(root, ".sf-attention"));
}

// ---- the GPT --------------------------------------------------------------------------
function gptWidget(root, name) {
  const text = $(root, ".sf-text");
  const message = $(root, ".sf-message");
  const speed = $(root, ".sf-speed");
  const progress = $(root, ".sf-written");
  const rates = $(root, ".sf-rates");
  const buttons = [".sf-step", ".sf-run", ".sf-reset", ".sf-cache", ".sf-long", ".sf-compare"]
    .map((s) => $(root, s));
  let worker = null;

  function setRunning(running) {
    const stop = $(root, ".sf-stop");
    const focused = document.activeElement;  // a disabled button loses the keyboard's focus
    root.dataset.running = String(running);
    stop.disabled = !running;
    for (const button of buttons) button.disabled = running;
    if (running && buttons.includes(focused)) stop.focus();
    if (!running && focused === stop) $(root, ".sf-run").focus();
  }
  function reset() {
    if (!worker) return;
    if (root.dataset.running === "true") worker.postMessage({ type: "stop" });  // a new prompt mid-run
    message.textContent = "";
    speed.textContent = "";
    worker.postMessage({ type: "reset", prompt: $(root, ".sf-prompt").value,
                         sentiment: $(root, ".sf-sentiment").value });
  }
  function run(count, type = "run") {
    if (!worker || root.dataset.running === "true") return;
    setRunning(true);
    message.textContent = "";
    worker.postMessage({
      type, count, cache: $(root, ".sf-cache").checked,
      temperature: $(root, ".sf-temperature").value,
      topK: $(root, ".sf-topk").value, topP: $(root, ".sf-topp").value,
    });
  }
  // The two rates of one comparison, side by side.
  function showRates({ made, cachedSeconds, replayed, uncachedSeconds, before }) {
    const cached = made / cachedSeconds, uncached = replayed / uncachedSeconds;
    const rate = (x) => (Number.isFinite(x) ? say(`${x.toFixed(1)} tokens/s`, `每秒 ${x.toFixed(1)} 个词元`)
      : say("none", "无"));
    const ratio = Number.isFinite(cached / uncached) ? (cached / uncached).toFixed(1) : null;
    rates.replaceChildren(...[
      say(`with the cache: ${rate(cached)}`, `使用缓存：${rate(cached)}`),
      say(`without: ${rate(uncached)}`, `不使用：${rate(uncached)}`),
      say(`(${tokenCount(made)} after a text of ${before}` + (ratio ? `; ${ratio}× as fast with it)` : ")"),
          `（在 ${before} 个词元的文本之后写 ${made} 个词元` + (ratio ? `；用缓存快 ${ratio} 倍）` : "）")),
    ].map((text) => Object.assign(document.createElement("span"), { textContent: text })));
    Object.assign(rates.dataset, { cached: String(cached), uncached: String(uncached),
                                   before: String(before), made: String(made) });
    rates.dataset.runs = String(Number(rates.dataset.runs || 0) + 1);
  }
  function showBars(top) {
    $(root, ".sf-bars").replaceChildren(...top.map(({ label, p }) => {
      const row = document.createElement("li");
      const bar = document.createElement("span");
      bar.className = "sf-bar";
      bar.style.width = `${(60 * p).toFixed(1)}%`;
      row.append(bar, ` ${JSON.stringify(label)} ${p.toFixed(3)}`);
      return row;
    }));
  }
  function showText(data) {
    text.textContent = data.text;
    text.dataset.ids = JSON.stringify(data.ids);
    text.dataset.promptLength = String(data.promptLength);  // the ids before the first new one
  }

  loadOnFirstFocus(root, name, (manifest, ready) => {
    worker = ready;
    $(root, ".sf-status").textContent = modelLine(manifest);
    setRunning(false);
    reset();
  }, (data) => {
    if (data.type === "reset") {
      showText(data);
      showBars([]);
    } else if (data.type === "started") {
      progress.max = Math.max(1, data.count);
      progress.value = 0;
      progress.hidden = false;
      speed.textContent = say(`Writing ${tokenCount(data.count)}` + (data.comparing ? " with the cache…" : "…"),
        `正在写 ${data.count} 个词元` + (data.comparing ? "（用缓存）…" : "…"));
    } else if (data.type === "token") {
      showText(data);
      showBars(data.top);
      progress.value = data.made;
    } else if (data.type === "replaying") {
      progress.max = Math.max(1, data.count);
      progress.value = 0;
      progress.hidden = false;
      speed.textContent = say(`Reading the same ${tokenCount(data.count)} again without the cache…`,
        `不使用缓存，再读一遍同样的 ${data.count} 个词元…`);
    } else if (data.type === "replayed") {
      progress.value = data.replayed;
    } else if (data.type === "compared") {
      setRunning(false);
      progress.hidden = true;
      speed.textContent = data.stopped ? say("Stopped; the rates are for the tokens timed before Stop.",
        "已停止；速度只算停止之前计时的词元。") : "";
      showRates(data);
      if (data.ended) {
        message.textContent = say(`The model wrote ${data.ended}: the review shown ends there (the ` +
          "timing went on to the count asked for). Reset to start another.",
          `模型写出了 ${data.ended}：显示的影评到此为止（计时继续到所要求的词元数）。点“重置”开始另一篇。`);
      }
    } else if (data.type === "refused") {  // the package's words, or the Chinese edition's
      setRunning(false);
      message.textContent = say(data.message, data.chinese);
    } else if (data.type === "finished") {
      setRunning(false);
      progress.hidden = true;
      showText(data);
      const { made, seconds } = data;
      const rate = (made / seconds).toFixed(1);
      speed.textContent = !made ? say("No token written.", "没有写出词元。")
        : say(`${tokenCount(made)} in ${seconds.toFixed(2)} s: ${rate} tokens/s ` +
                `(${data.useCache ? "with" : "without"} the cache)`,
              `${made} 个词元用时 ${seconds.toFixed(2)} s：每秒 ${rate} 个词元` +
                `（${data.useCache ? "使用" : "不使用"}缓存）`);
      speed.dataset.tokensPerSecond = made ? String(made / seconds) : "";
      speed.dataset.runs = String(Number(speed.dataset.runs || 0) + 1);
      if (data.why === "ended") {
        message.textContent = say(`The model wrote ${data.ended}: the review is finished. Reset to start another.`,
                                  `模型写出了 ${data.ended}：这篇影评写完了。点“重置”开始另一篇。`);
      } else if (data.why === "stopped") {
        message.textContent = say(`Stopped after ${tokenCount(made)}.`, `写了 ${made} 个词元后停止。`);
      } else if (data.contextFull) {
        message.textContent = say(`The context is full: the model reads at most ${data.contextLength} ` +
          "tokens. Reset to start another.", `上下文已满：模型最多读 ${data.contextLength} 个词元。点“重置”开始另一篇。`);
      }
    }
  });
  for (const selector of [".sf-prompt", ".sf-sentiment"]) {
    $(root, selector).addEventListener("change", reset);
  }
  $(root, ".sf-cache").addEventListener("change", () => worker?.postMessage({ type: "cache" }));
  $(root, ".sf-reset").addEventListener("click", reset);
  $(root, ".sf-step").addEventListener("click", () => run("1"));
  $(root, ".sf-run").addEventListener("click", () => run($(root, ".sf-count").value));
  $(root, ".sf-compare").addEventListener("click", () => run($(root, ".sf-count").value, "compare"));
  $(root, ".sf-long").addEventListener("click", () => {
    $(root, ".sf-prompt").value = $(root, ".sf-long-text").content.textContent.trim().replace(/\s+/g, " ");
    reset();
  });
  $(root, ".sf-stop").addEventListener("click", () => {
    worker?.postMessage({ type: "stop" });
    speed.textContent = say("Stopping…", "正在停止…");
  });
}

// Chapter 11 lists, beside the classifier's box, the served model's errors on the reviews written
// for the book, each a button labelled as its cell writes it in English: "positive review,
// P(positive) 0.23: <the review>". On a Chinese page the box gives each label, and the list's
// name, in Chinese; the review itself stays as the model reads it. A label of another shape is
// left as it is.
const ERROR_LABEL = /^(positive|negative) review, P\(positive\) (\d+(?:\.\d+)?): /;

function errorsInThePagesLanguage() {
  if (!CHINESE) return;
  for (const list of document.querySelectorAll("ul.sf-errors")) {
    list.setAttribute("aria-label", "交互框所用的模型在为本书撰写的影评上的错误");
    for (const button of list.querySelectorAll("button.sf-try")) {
      const found = ERROR_LABEL.exec(button.textContent);
      if (!found) continue;
      const label = found[1] === "positive" ? "正面影评" : "负面影评";
      button.textContent = `${label}，P(positive) ${found[2]}：${button.textContent.slice(found[0].length)}`;
    }
  }
}

async function start() {
  errorsInThePagesLanguage();
  const widgets = [["sf-classifier", classifierWidget], ["sf-gpt", gptWidget]];
  let available = [];
  try {
    const response = await fetch(new URL("index.json", MODELS));
    available = (await response.json()).models || [];
  } catch (err) { /* a site without the index has no models */ }
  if (typeof Worker === "undefined" || typeof WebAssembly === "undefined") return;
  for (const [id, make] of widgets) {
    const root = document.getElementById(id);
    if (!root) continue;
    const name = root.dataset.model;
    if (!available.includes(name)) continue;  // the page's instructions stay as they are
    root.classList.add("sf-live");
    root.dataset.state = "waiting";
    $(root, ".sf-status").textContent = say("Click or tab into this box to load the model.",
                                             "点击或用 Tab 键进入此框即可加载模型。");
    make(root, name);
    announce(root, name).catch(() => { /* the plain line stays */ });
  }
}

start();
