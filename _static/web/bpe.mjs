// Chapter 1's byte-level BPE in the browser: reads the tokenizer file that
// `scratchformer export-web` writes (tokenizer.json) and gives the same ids as Python.
//
// The file carries the pre-tokenization pattern already translated for JavaScript
// (`js_pattern`): every \p{L}, \p{N} and \s is spelled out as the code points Python's
// engine gives it, so the browser's own Unicode tables (older or newer than Python's) and
// JavaScript's different \s (it counts U+FEFF, not U+0085 or U+001C-U+001F) change nothing.
// Plain ES module, no dependencies; works in browsers and in node.

const LONE_SURROGATE = /\p{Cs}/gu;
const utf8 = new TextEncoder();
const text = new TextDecoder("utf-8", { fatal: false });

// A string whose characters are bytes 0-255: the key of a token in the rank table.
function byteString(bytes) {
  let s = "";
  for (let i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]);
  return s;
}

function hexBytes(hex) {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.substr(2 * i, 2), 16);
  return bytes;
}

// A binary min-heap of [rank, position] pairs: lowest rank first, then leftmost.
class Heap {
  constructor() { this.items = []; }
  get size() { return this.items.length; }
  less(a, b) { return a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]); }
  push(item) {
    const h = this.items;
    h.push(item);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(h[i], h[parent])) break;
      [h[i], h[parent]] = [h[parent], h[i]];
      i = parent;
    }
  }
  pop() {
    const h = this.items;
    const top = h[0];
    const last = h.pop();
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < h.length && this.less(h[l], h[m])) m = l;
        if (r < h.length && this.less(h[r], h[m])) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m], h[i]];
        i = m;
      }
    }
    return top;
  }
}

// Chapter 1's `merge_chunk`: merge the lowest-rank adjacent pair (leftmost on ties) until
// none is left; live parts are a linked list, candidate pairs a heap of (rank, position).
export function mergeChunk(data, ranks) {
  const n = data.length;
  const parts = new Array(n);
  for (let i = 0; i < n; i++) parts[i] = String.fromCharCode(data[i]);
  const next = new Int32Array(n), previous = new Int32Array(n);
  for (let i = 0; i < n; i++) { next[i] = i + 1; previous[i] = i - 1; }
  const heap = new Heap();
  for (let i = 0; i + 1 < n; i++) {
    const rank = ranks.get(parts[i] + parts[i + 1]);
    if (rank !== undefined) heap.push([rank, i]);
  }
  while (heap.size) {
    const [rank, i] = heap.pop();
    const j = next[i];
    if (parts[i] === null || j === n || ranks.get(parts[i] + parts[j]) !== rank) continue;
    const part = parts[i] = parts[i] + parts[j];
    parts[j] = null;
    const k = next[i] = next[j];
    if (k < n) {
      previous[k] = i;
      const right = ranks.get(part + parts[k]);
      if (right !== undefined) heap.push([right, i]);
    }
    const h = previous[i];
    if (h >= 0) {
      const left = ranks.get(parts[h] + part);
      if (left !== undefined) heap.push([left, h]);
    }
  }
  const ids = [];
  for (const part of parts) if (part !== null) ids.push(ranks.get(part));
  return ids;
}

export class BPETokenizer {
  // `record`: the parsed tokenizer.json of `scratchformer export-web`.
  constructor(record) {
    if (record.format !== "scratchformer.web-tokenizer" || record.version !== 1) {
      throw new Error("not a tokenizer file written by scratchformer export-web");
    }
    this.record = record;
    this.ranks = new Map();
    this.bytesOf = [];
    record.tokens.forEach((hex, id) => {
      const bytes = hexBytes(hex);
      this.bytesOf.push(bytes);
      this.ranks.set(byteString(bytes), id);
    });
    this.specialIds = record.special_tokens;  // {"<|endoftext|>": id, ...}
    for (const [token, id] of Object.entries(this.specialIds)) {
      this.bytesOf[id] = utf8.encode(token);
    }
    this.chunkRegex = new RegExp(record.js_pattern, "gu");
    this.cache = new Map();
  }

  static async load(url) {
    const response = await fetch(url);
    if (!response.ok) throw new Error(`${url}: ${response.status}`);
    return new BPETokenizer(await response.json());
  }

  get nVocab() { return this.bytesOf.length; }

  // The text cut into chunks by the pre-tokenization pattern (lone surrogates as U+FFFD).
  chunks(input) {
    return Array.from(input.replace(LONE_SURROGATE, "\uFFFD").matchAll(this.chunkRegex),
                      (m) => m[0]);
  }

  // Ids of `input`, special-token strings treated as plain text.
  encodeOrdinary(input) {
    const ids = [];
    for (const chunk of this.chunks(input)) {
      let chunkIds = this.cache.get(chunk);
      if (chunkIds === undefined) {
        chunkIds = mergeChunk(utf8.encode(chunk), this.ranks);
        if (this.cache.size > 100000) this.cache.clear();
        if (chunk.length < 1000) this.cache.set(chunk, chunkIds);
      }
      for (const id of chunkIds) ids.push(id);
    }
    return ids;
  }

  decodeBytes(ids) {
    const pieces = ids.map((id) => {
      const bytes = this.bytesOf[id];
      if (bytes === undefined) throw new Error(`token id ${id} is not in the vocabulary`);
      return bytes;
    });
    const out = new Uint8Array(pieces.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of pieces) { out.set(p, at); at += p.length; }
    return out;
  }

  // Bytes that are not UTF-8 become U+FFFD, as in Python's `decode`.
  decode(ids) { return text.decode(this.decodeBytes(ids)); }
}

// Chapter 10's cleaning: the site's `<br />` line breaks become spaces.
export function cleanReview(input, record) {
  const clean = record.clean;
  if (!clean) return input;
  return input.replace(new RegExp(clean.js_pattern, "giu"), clean.replacement);
}

// Chapter 10's `frame_tokens`: [CLS] + tokens + [SEP], cut (head or head+tail) and padded.
// A model that reads a review in windows is framed by `reviewWindows` instead.
export function frameTokens(ids, framing) {
  const { cls, sep, pad, max_len: maxLen, truncation } = framing;
  if (truncation !== "head" && truncation !== "head+tail") {
    throw new Error(`frameTokens cuts "head" or "head+tail", not ${JSON.stringify(truncation)}` +
                    (truncation === "windows" ? ": use reviewWindows" : ""));
  }
  let body = ids.slice();
  const budget = maxLen - 2;
  if (body.length > budget) {
    if (truncation === "head") body = body.slice(0, budget);
    else {
      const head = Math.floor(budget / 4);
      body = body.slice(0, head).concat(body.slice(body.length - (budget - head)));
    }
  }
  const framed = [cls, ...body, sep];
  while (framed.length < maxLen) framed.push(pad);
  return framed;
}

// The package's `review_windows` (truncation "windows"): the review's tokens in consecutive,
// non-overlapping windows of `max_len - 2` (the last one shorter; an empty review is one empty
// window), each framed [CLS] + window + [SEP] and padded to `max_len`. Window w reads
// `windows[w].indexOf(sep) + 1` real tokens (an ordinary encoding holds no [SEP]).
export function reviewWindows(ids, framing) {
  const { cls, sep, pad, max_len: maxLen } = framing;
  const budget = maxLen - 2;
  const windows = [];
  for (let start = 0; start === 0 || start < ids.length; start += budget) {
    const framed = [cls, ...ids.slice(start, start + budget), sep];
    while (framed.length < maxLen) framed.push(pad);
    windows.push(framed);
  }
  return windows;
}

// A review as the classifier reads it: cleaned, tokenized, framed to `max_len` ids; for a
// model that reads in windows, the list of its windows (`reviewWindows`).
export function encodeReview(tokenizer, input) {
  const record = tokenizer.record;
  const ids = tokenizer.encodeOrdinary(cleanReview(input, record));
  return record.framing.truncation === "windows"
    ? reviewWindows(ids, record.framing) : frameTokens(ids, record.framing);
}
