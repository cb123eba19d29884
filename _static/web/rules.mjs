// The package's rules for the GPT's box, in JavaScript: chapter 12's `check_sampling` and the
// checks `generate` makes before it writes, with the package's own messages (and the Chinese
// edition's words for each), and
// `next_token_probabilities`. A box's setting arrives as the text of its field and is read as
// Python would read that text typed as an argument: digits are an int, a decimal number a float,
// an empty top-k or top-p None (off), anything else the text itself. tests/data/
// web_settings_cases.json holds the cases both the Python and the browser tests check.
// Plain ES module, no dependencies; works in browsers, workers and node.

const INTEGER = /^[+-]?\d+$/;
const FLOAT = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$|^[+-]?(inf|infinity|nan)$/i;

// A field's text as the Python value it stands for: {kind: "int"|"float"|"none"|"str", value}.
export function readSetting(text, emptyIsNone) {
  const trimmed = String(text).trim();
  if (trimmed === "" && emptyIsNone) return { kind: "none", value: null };
  if (INTEGER.test(trimmed)) {  // digits: Python's exact int, which a Number may round
    return { kind: "int", value: Number(trimmed), digits: BigInt(trimmed).toString() };
  }
  if (FLOAT.test(trimmed)) {
    const word = trimmed.replace(/^[+-]/, "").toLowerCase();
    const sign = trimmed.startsWith("-") ? -1 : 1;
    if (word === "nan") return { kind: "float", value: NaN };
    if (word.startsWith("inf")) return { kind: "float", value: sign * Infinity };
    return { kind: "float", value: Number(trimmed) };
  }
  return { kind: "str", value: String(text) };
}

// Python's repr of a float: the shortest digits that read back the same, in fixed notation for
// exponents -4 to 15 and with ".0" on whole numbers, else as 1e-05 / 1.5e+16.
function floatRepr(x) {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const [mantissa, exponentText] = x.toExponential().split("e");
  const exponent = Number(exponentText);
  const negative = mantissa.startsWith("-");
  const digits = mantissa.replace("-", "").replace(".", "");
  let body;
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) body = "0." + "0".repeat(-exponent - 1) + digits;
    else if (digits.length <= exponent + 1) body = digits + "0".repeat(exponent + 1 - digits.length) + ".0";
    else body = digits.slice(0, exponent + 1) + "." + digits.slice(exponent + 1);
  } else {
    const shown = digits.length > 1 ? digits[0] + "." + digits.slice(1) : digits;
    const magnitude = String(Math.abs(exponent)).padStart(2, "0");
    body = `${shown}e${exponent < 0 ? "-" : "+"}${magnitude}`;
  }
  return (negative ? "-" : "") + body;
}

// Python's repr of a value read by `readSetting`.
export function pythonRepr(setting) {
  switch (setting.kind) {
    case "none": return "None";
    case "int": return setting.digits;
    case "float": return floatRepr(setting.value);
    default: return `'${setting.value.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
  }
}

const isNumber = (s) => s.kind === "int" || s.kind === "float";

// A refusal in both editions' words: `english` is the package's message, word for word (the
// tests compare it with the ValueError's); `chinese` says the same in the Chinese edition's
// words, with the same value written as Python writes it. The box shows the page's one.
const refusal = (english, chinese) => ({ english, chinese });

// Chapter 12's `check_sampling`: its ValueError's refusal, or null.
export function samplingRefusal(temperature, topK, topP) {
  if (!(isNumber(temperature) && temperature.value >= 0 && temperature.value < Infinity)) {
    const got = pythonRepr(temperature);
    return refusal(`temperature must be a finite number >= 0 (0 = greedy), got ${got}`,
      `temperature 必须是大于等于 0 的有限数（0 即贪心解码），收到的是 ${got}`);
  }
  if (topK.kind !== "none" && !(topK.kind === "int" && topK.value >= 1)) {
    const got = pythonRepr(topK);
    return refusal(`top_k must be a positive integer or None, got ${got}`,
      `top_k 必须是正整数或 None，收到的是 ${got}`);
  }
  if (topP.kind !== "none" && !(isNumber(topP) && topP.value > 0 && topP.value <= 1)) {
    const got = pythonRepr(topP);
    return refusal(`top_p must be in (0, 1] or None, got ${got}`,
      `top_p 必须在 (0, 1] 之内或为 None，收到的是 ${got}`);
  }
  return null;
}

// The checks chapter 12's `generate` makes before it writes, in its order: the number of new
// tokens, the room the context leaves, then the sampling settings. The refusal, or null.
export function generateRefusal(promptLength, count, contextLength, temperature, topK, topP) {
  if (!(count.kind === "int" && count.value >= 0)) {
    const got = pythonRepr(count);
    return refusal(`max_new_tokens must be an integer >= 0, got ${got}`,
      `max_new_tokens 必须是大于等于 0 的整数，收到的是 ${got}`);
  }
  if (promptLength + count.value > contextLength) {
    return refusal(`a prompt of ${promptLength} tokens plus ${count.digits} new ones exceeds the ` +
      `model's context_length of ${contextLength}`,
      `${promptLength} 个词元的提示加上 ${count.digits} 个新词元，超过了模型的 context_length（${contextLength}）`);
  }
  return samplingRefusal(temperature, topK, topP);
}

// Chapter 12's `next_token_probabilities`: temperature, then top-k (ties kept), then top-p.
// `topK` and `topP` are numbers or null (off); the settings are checked first.
export function nextTokenProbabilities(logits, temperature, topK, topP) {
  const n = logits.length;
  let best = 0;
  for (let i = 1; i < n; i++) if (logits[i] > logits[best]) best = i;
  const p = new Float64Array(n);
  if (temperature === 0) { p[best] = 1; return p; }
  let sum = 0;
  for (let i = 0; i < n; i++) { p[i] = Math.exp((logits[i] - logits[best]) / temperature); sum += p[i]; }
  for (let i = 0; i < n; i++) p[i] /= sum;
  const renormalize = () => {
    const s = p.reduce((a, b) => a + b, 0);
    for (let i = 0; i < n; i++) p[i] /= s;
  };
  if (topK !== null && topK < n) {
    const kth = Float64Array.from(p).sort().reverse()[topK - 1];
    for (let i = 0; i < n; i++) if (p[i] < kth) p[i] = 0;
    renormalize();
  }
  if (topP !== null && topP < 1) {
    const order = Array.from(p.keys()).sort((a, b) => p[b] - p[a]);
    let before = 0;
    for (const i of order) { const mass = p[i]; if (before >= topP) p[i] = 0; before += mass; }
    renormalize();
  }
  return p;
}
