// Chapter 11's `reading_contributions`, in JavaScript: each token's part of a verdict, measured
// against the empty review. The classifier reads the review a token at a time, forwards from the
// empty review `[CLS] [SEP]` and backwards from it; a token's part is how far the logit gap
// log P(positive) - log P(negative) moved when the token was added, averaged over the two
// readings. The parts sum, with the empty review's gap (the baseline), to the review's gap.
// The worker frames the rows, runs the model on them and hands the gaps back here;
// tests/package/web/test_web_reading.py holds both steps to the Python function under node.
// Plain ES module, no dependencies; works in browsers, workers and node.

// The texts to read, as token lists: the prefixes of `tokens` (the empty one first, the whole
// last), then the suffixes that are neither whole nor empty (from the second token on).
export function readingRows(tokens) {
  const n = tokens.length;
  const rows = [];
  for (let k = 0; k <= n; k++) rows.push(tokens.slice(0, k));
  for (let k = 1; k < n; k++) rows.push(tokens.slice(k));
  return rows;
}

// From the gaps of `readingRows(tokens)`'s rows, in their order: {parts (one per token),
// baseline (the empty review's gap), gap (the whole review's)}.
export function readingParts(gaps, n) {
  const prefix = (k) => gaps[k];                                      // the first k tokens
  const suffix = (k) => (k === 0 ? gaps[n] : k === n ? gaps[0] : gaps[n + k]);  // tokens k..n-1
  const parts = new Float64Array(n);
  for (let t = 0; t < n; t++) {
    const forwards = prefix(t + 1) - prefix(t);
    const backwards = suffix(t) - suffix(t + 1);
    parts[t] = (forwards + backwards) / 2;
  }
  return { parts: Array.from(parts), baseline: gaps[0], gap: gaps[n] };
}
