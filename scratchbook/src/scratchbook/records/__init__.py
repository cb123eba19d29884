"""The book's recorded results, each file of `book/results/` once, as a `Record` that names its
writer and the fields its readers rely on; and, one module per chapter, the tables and figures
the chapters draw from them.

A chapter's argument needs its table or figure, not the code that reads a record, checks it and
lays it out: that code lives in these modules, and the chapter calls it in one line. Every
script of `tools/records/` and `benchmarks/` writes its record through the constant here.

What this deliberately does not hold: run folders under `runs/` (the scripts read those), and
`gpu_check_*.txt`, the plain log `make gpu-check` leaves, which no page reads.
"""

from __future__ import annotations

from pathlib import Path

from scratchbook.record import Record, results_dir

TRAIN_IMDB = "scratchformer train-imdb (its results.json)"
TRAIN_GPT = "scratchformer train-gpt (its results.json)"
GENERATE = "scratchformer generate --json"
WRITTEN_BY_A_LANGUAGE_MODEL = "no script: text written for the book by a language model"

# Who or what made the text sets chapter 11 scores, when, and what they have shaped since: said
# here where the files cannot say it (text written without a script; records whose runs are gone).
WRITTEN_TEXTS_PROVENANCE = {
    "made_by": "a language model, writing for the book: 80 short reviews of five kinds (plain, "
               "negation, contrast, expectation, short), half positive, and 30 pairs of texts "
               "with the same words in two orders",
    "labelled_by": "the same language model: each text was written to be positive or negative",
    "when": "committed on 2026-12-02 (commit 6129362), after the model the box served then (the "
            "full CPU run) had been trained, and before the three models the box has served "
            "since (the whole-review run, the run taught by NBSVM, the run taught with sentences)",
    "shaped_choices": "scored on every model the box has served, they were read when the book "
                      "chose to teach with sentences and to serve that model: they are no longer "
                      "held out",
}
LABELLED_SENTENCES_PROVENANCE = {
    "made_by": "IMDB's reviewers: one sentence drawn from each review of a seed's validation "
               "slice (scratchformer.data.sentences.draw_sentences), 500 of each seed's drawn again",
    "labelled_by": "two language models, working independently, each given the written guide "
                   "tools/records/labelling_guide.md; no person labelled them; a sentence is kept "
                   "where both gave the same verdict (the records' 'labellers' are these two)",
    "when": "labelled on 2026-12-05 (commit b0613f9), after the arm of 2 sentences a review had "
            "been chosen on sentences labelled as their review (commit 67cc98b); the keep-rule "
            "then moved to these labels (commit 84b9340) and kept the same arm",
    "shaped_choices": "the served model's rule reads them (they turned down 8 sentences a "
                      "review): they are validation, not held out",
}

# Benchmarks (benchmarks/), read by chapters 1, 8, 10, 12, 13 and the running appendix.
TOKENIZER_BENCHMARK = Record("tokenizer_benchmark.json", "benchmarks/tokenizer.py",
                             {"command": "text", "encode_ratio": "number"})
ATTENTION_BENCHMARK_CPU = Record("attention_benchmark_cpu.json", "benchmarks/attention.py",
                                 {"command": "text", "rows": "list"})
BERT_STEP_BENCHMARK_CPU = Record("bert_step_benchmark_cpu.json", "benchmarks/bert_cpu.py",
                                 {"command": "text", "rows": "list"})
CPU_MEMORY = Record("cpu_memory.json", "benchmarks/cpu_memory.py",
                    {"command": "text", "summary": "mapping"}, indent=1, final_newline=False)
GPT_KV_CACHE = Record("gpt_kv_cache.json", "benchmarks/gpt_kv_cache.py",
                      {"command": "text", "rows": "list"})
PRETRAINING_THROUGHPUT = Record("pretraining_throughput.json", "benchmarks/pretraining.py",
                                {"command": "text", "rows": "list"}, indent=1,
                                final_newline=False)
IMDB_BASELINES = Record("imdb_baselines.json", "benchmarks/baselines.py",
                        {"command": "text", "validation": "mapping", "test": "list"})

# Chapter 11: the recorded run, its predictions, its ablations, and the experiments beside it.
IMDB_CPU = Record("imdb_cpu.json", TRAIN_IMDB, {"command": "text", "test.accuracy": "fraction"})
IMDB_CPU_RERUNS = Record("imdb_cpu_reruns.json", "tools/records/running_reruns.py",
                         {"command": "text", "recorded": "mapping", "runs": "list"})
IMDB_CPU_PREDICTIONS = Record("imdb_cpu_predictions.json",
                              "tools/records/ch11_record_predictions.py",
                              {"command": "text", "predictions": "list"}, ascii=False)
IMDB_CPU_ABLATIONS = Record("imdb_cpu_ablations.json", "tools/records/ch11_why_it_loses.py",
                            {"command": "text", "runs": "mapping",
                             "runs.*.*.test.accuracy": "fraction"},
                            indent=None, final_newline=False, compact=True)
GAP_INPUTS = ("254 tokens", "510 tokens", "whole review")  # inputs both counting models read
GAP_TRANSFORMER_INPUTS = ("254 tokens", "510 tokens")  # the Transformer reads no whole review
IMDB_GAP = Record("imdb_gap.json", "tools/records/ch11_gap.py", {
    "command": "text", "attention_free.mean": "fraction",
    **{f"counting.{name}.{model}.accuracy": "fraction"
       for name in GAP_INPUTS for model in ("bag_of_words", "nbsvm")},
    **{path: kind for name in GAP_TRANSFORMER_INPUTS for path, kind in (
        (f"transformer.inputs.{name}.mean", "fraction"),
        (f"transformer.inputs.{name}.test_accuracy", "mapping"),
        (f"transformer.inputs.{name}.test_accuracy.*", "fraction"),
        (f"gaps.{name}.transformer_minus_bag_of_words", "difference"))}})
WHOLE_REVIEW_CANDIDATES = ("254 tokens", "510 tokens", "whole review")
IMDB_WHOLE_REVIEW = Record("imdb_whole_review.json", "tools/records/ch11_whole_review.py", {
    "command": "text", "best_transformer_test_accuracy.model": "text",
    "best_transformer_test_accuracy.per_seed": "list",
    **{f"candidates.{name}.{split}.*": "fraction"
       for name in WHOLE_REVIEW_CANDIDATES for split in ("validation", "test")}})
TAUGHT_FIELDS = {"command": "text", "runs.*.*.validation": "fraction",
                 "runs.*.*.test.accuracy": "fraction", "taught.nbsvm.per_seed": "list"}
IMDB_TAUGHT = Record("imdb_taught.json", "tools/records/ch11_taught_record.py", TAUGHT_FIELDS)
IMDB_TAUGHT_BLOCKS = Record("imdb_taught_blocks.json",
                            "tools/records/ch11_taught_record.py --untaught",
                            {**TAUGHT_FIELDS, "untaught.*.validation": "fraction",
                             "untaught.*.test.accuracy": "fraction"})
IMDB_SHARED_WORDS = Record("imdb_shared_words.json", "tools/records/ch11_shared_words.py",
                           {"command": "text", "seeds": "mapping", "rare.reviews_using_it": "list",
                            "neighbours_sharing_a_rare_word.next": "fraction",
                            "neighbours_sharing_a_rare_word.random": "fraction"})
SHORT_TEXTS = ("validation_sentences", "validation_labelled")  # labelled as the review; as texts
IMDB_SENTENCES = Record("imdb_sentences.json", "tools/records/ch11_sentences.py", {
    "command": "text", "served.arm": "text", "differences": "mapping",
    **{f"runs.*.*.{key}": "fraction" for key in ("validation", *SHORT_TEXTS)},
    **{f"counting.*.*.{key}": "fraction" for key in SHORT_TEXTS}},
    provenance=LABELLED_SENTENCES_PROVENANCE)
SENTENCES_LABELLED = Record("sentences_labelled.jsonl",
                            "tools/records/ch11_label_sentences.py gather",
                            {"*.seed": "number", "*.index": "number", "*.sha256": "text",
                             "*.labels": "list"}, provenance=LABELLED_SENTENCES_PROVENANCE)
WRITTEN_REVIEWS = Record("handwritten_reviews.jsonl", WRITTEN_BY_A_LANGUAGE_MODEL,
                         {"*.text": "text", "*.label": "number", "*.kind": "text"}, ascii=False,
                         provenance=WRITTEN_TEXTS_PROVENANCE)
ORDER_PAIRS = Record("order_pairs.jsonl", WRITTEN_BY_A_LANGUAGE_MODEL,
                     {"*.positive": "text", "*.negative": "text", "*.kind": "text"},
                     ascii=False, provenance=WRITTEN_TEXTS_PROVENANCE)
HANDWRITTEN_REVIEWS = Record("handwritten_reviews.json", "tools/records/ch11_handwritten.py",
                             {"command": "text"}, indent=1, ascii=False,
                             provenance=WRITTEN_TEXTS_PROVENANCE)
ORDER_PAIRS_FOUND = Record("order_pairs_found.json", "tools/records/ch11_order_pairs.py",
                           {"command": "text", "rule": "mapping", "provenance": "mapping",
                            "halves": "mapping"}, indent=1)
ORDER_PAIRS_CHECK = Record("order_pairs_check.jsonl",
                           "tools/records/ch11_order_pairs.py (the checker's verdicts)",
                           {"*.id": "number", "*.judged": "text"})
ORDER_PAIRS_SCORES = Record("order_pairs_scores.json", "tools/records/ch11_order_scores.py",
                            {"command": "text", "models": "mapping", "table": "any"}, indent=1,
                            provenance={"written": WRITTEN_TEXTS_PROVENANCE["made_by"]})
ORDER_PAIRS_READING = Record("order_pairs_reading.json", "tools/records/ch11_order_reading.py",
                             {"command": "text", "reading": "any"}, indent=1, ascii=False)
IMDB_CONTROLS = Record("imdb_controls.json", "tools/records/ch11_controls.py",
                       {"command": "text", "table": "any", "comparisons": "any"}, indent=1)
IMDB_SENTENCES_EQUAL = Record("imdb_sentences_equal.json", "tools/records/ch11_sentences_equal.py",
                              {"command": "text", "table": "any", "comparisons": "any"},
                              indent=1)

# Chapter 12.
GPT_CPU = Record("gpt_cpu.json", TRAIN_GPT, {"command": "text"})
GPT_CPU_3000_STEPS = Record("gpt_cpu_3000_steps.json", TRAIN_GPT, {"command": "text"})
GPT_CPU_SENTIMENT = Record("gpt_cpu_sentiment.json", TRAIN_GPT, {"command": "text"})
GPT_CPU_SENTIMENT_TOKEN = Record("gpt_cpu_sentiment_token.json",
                                 "tools/records/ch12_sentiment_token.py", {"command": "text"},
                                 indent=None)
GPT_NGRAMS = Record("gpt_ngrams.json", "tools/records/ch12_ngram_orders.py",
                    {"command": "text", "runs": "mapping"}, indent=1, final_newline=False)
SAMPLING_RULES = ("greedy", "temperature", "top_k", "top_p")  # gpt_cpu_sampling/<rule>.json
GPT_SAMPLING = {rule: Record(f"gpt_cpu_sampling/{rule}.json", GENERATE,
                             {"command": "text", "samples": "list"})
                for rule in SAMPLING_RULES}
GPT_REVIEWS = {(model, sentiment): Record(f"gpt_cpu_reviews/{model}_{sentiment}.json", GENERATE,
                                          {"command": "text", "samples": "list"})
               for model in ("pretrained", "finetuned") for sentiment in ("negative", "positive")}

# Chapter 13.
PRETRAIN_CPU = Record("pretrain_cpu.json", "tools/records/ch13_record_pretraining.py",
                      {"command": "text",  # and who wrote the sentences the predictions read
                       **{f"predictions.sentences.{key}": "text"
                          for key in ("made_by", "written", "shaped_a_choice")}},
                      indent=1)
PRETRAIN_SWEEP_CPU = Record("pretrain_sweep_cpu.json", "tools/records/ch13_mlm_sweep.py",
                            {"command": "text", "runs": "mapping"}, indent=1,
                            final_newline=False)
PRETRAIN_ELECTRA_LOSSES_CPU = Record("pretrain_electra_losses_cpu.json",
                                     "tools/records/ch13_electra_losses.py",
                                     {"command": "text"}, indent=1)
PRETRAIN_OBJECTIVES_CPU = Record("pretrain_objectives_cpu.json",
                                 "tools/records/ch13_objectives.py", {"command": "text"},
                                 indent=1)
TRANSFER_CPU = Record("transfer_cpu.json", "tools/records/ch13_gpt_transfer.py",
                      {"command": "text"}, indent=1)

# The web appendix.
WEB_CLASSIFIER_PRECISION = Record("web_classifier_precision.json",
                                  "tools/records/appendix_web_precision.py",
                                  {"command": "text"}, indent=1, final_newline=False)
WEB_BOXES = Record("web_boxes.json", "benchmarks/web_boxes.py", {
    "command": "text", "load.busy": "any", "gpt_manifest_sha256": "text",
    "bytes.before_use": "mapping", "bytes.first_use": "mapping", "cache.tokens": "number",
    "cache.rounds": "number", "cache.default": "mapping", "cache.long": "mapping"}, indent=1)
WEB_CONTRIBUTIONS = Record("web_contributions.json", "benchmarks/web_contributions.py", {
    "command": "text", "hits": "number", "reviews": "list", "hits_by_other_colourings": "mapping",
    "alike.tokens": "list", "alike.contributions": "list"}, indent=1, ascii=False)


def tuning_records(results: Path | None = None) -> dict[str, Record]:
    """The runs of the running appendix's CPU tuning, `imdb_cpu_tuning/<setting>_seed<k>.json`
    (each a `train-imdb` run's results.json), by file stem."""
    folder = (results if results is not None else results_dir()) / "imdb_cpu_tuning"
    return {path.stem: Record(f"imdb_cpu_tuning/{path.name}", TRAIN_IMDB,
                              {"command": "text", "history": "list"})
            for path in sorted(folder.glob("*.json"))}


RECORDS: tuple[Record, ...] = (
    TOKENIZER_BENCHMARK, ATTENTION_BENCHMARK_CPU, BERT_STEP_BENCHMARK_CPU, CPU_MEMORY,
    GPT_KV_CACHE, PRETRAINING_THROUGHPUT, IMDB_BASELINES, IMDB_CPU, IMDB_CPU_RERUNS,
    IMDB_CPU_PREDICTIONS, IMDB_CPU_ABLATIONS, IMDB_GAP, IMDB_WHOLE_REVIEW, IMDB_TAUGHT, IMDB_TAUGHT_BLOCKS,
    IMDB_SHARED_WORDS, IMDB_SENTENCES, SENTENCES_LABELLED, WRITTEN_REVIEWS, ORDER_PAIRS,
    HANDWRITTEN_REVIEWS, ORDER_PAIRS_FOUND, ORDER_PAIRS_CHECK, ORDER_PAIRS_SCORES,
    ORDER_PAIRS_READING, IMDB_CONTROLS, IMDB_SENTENCES_EQUAL, GPT_CPU, GPT_CPU_3000_STEPS,
    GPT_CPU_SENTIMENT, GPT_CPU_SENTIMENT_TOKEN, GPT_NGRAMS, *GPT_SAMPLING.values(), *GPT_REVIEWS.values(), PRETRAIN_CPU, PRETRAIN_SWEEP_CPU,
    PRETRAIN_ELECTRA_LOSSES_CPU, PRETRAIN_OBJECTIVES_CPU, TRANSFER_CPU, WEB_CLASSIFIER_PRECISION,
    WEB_BOXES, WEB_CONTRIBUTIONS)


def record(name: str) -> Record:
    """The Record of `book/results/<name>`; a KeyError listing the known ones otherwise."""
    found = {item.name: item for item in RECORDS}
    if name not in found and name.startswith("imdb_cpu_tuning/"):
        found.update({item.name: item for item in tuning_records().values()})
    if name not in found:
        raise KeyError(f"no record {name!r} in book/results/: the records are "
                       f"{', '.join(sorted(found))}")
    return found[name]
