// Run the page's tokenizer (_static/web/bpe.mjs) under node for tests/package/web/test_web_tokenizer.py:
//   node tests/web_tokenize.mjs TOKENIZER.json < texts.json > results.json
// Each text gives {ordinary: ids of the cleaned text, framed: the classifier's ids (if the
// file frames; a list of windows for a file whose framing reads in "windows"), decoded: the
// ordinary ids decoded back to text}.
import { readFileSync } from "node:fs";
import { BPETokenizer, cleanReview, encodeReview } from "../_static/web/bpe.mjs";

const record = JSON.parse(readFileSync(process.argv[2], "utf8"));
const tokenizer = new BPETokenizer(record);
const texts = JSON.parse(readFileSync(0, "utf8"));
const started = Date.now();
const results = texts.map((text) => {
  const ordinary = tokenizer.encodeOrdinary(cleanReview(text, record));
  const result = { ordinary, decoded: tokenizer.decode(ordinary) };
  if (record.framing) result.framed = encodeReview(tokenizer, text);
  return result;
});
process.stdout.write(JSON.stringify({ results, seconds: (Date.now() - started) / 1000 }));
