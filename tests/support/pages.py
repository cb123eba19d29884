"""The book's pages as the tests see them: the numbers each page's prose glues (which must
appear on the built page), the pages in reading order, the translated ones."""

from __future__ import annotations

from pathlib import Path

import book  # tools/book, on the tests' path (pyproject.toml)
import translations
import yaml

from support import ROOT

# Chapter 4 computes the scores of "next" in "The next day is bright"; chapter 5 takes the same
# row apart by hand, so both pages must show it.
NEXT_SCORES = "[-2.60, -1.82, -2.86, -5.42, -4.46]"

# Numbers each chapter's prose quotes through {glue:text}; they must appear on the rendered page.
EXPECTED_IN_HTML: dict[str, list[str]] = {
    "book/01_tokenization.html": [
        "50,257", "50,000", "50256", "25954", "11819", "12157", "33,135", "65.9", "128", "100.000%",
        # the end-of-word marker in table cells (Markdown once read it as an HTML closing tag),
        # and the merge that attaches it: 2 and 3 merges must look different
        "o l d </w>", "f i n est </w>", "f i n est</w>",
        "1,256",  # the vocabulary the thousand requested merges give on IMDB
    ],
    "book/02_embeddings.html": ["1.414", "205.9", "3.15", "65.4", "38,597,376", "31"],
    "book/03_positional_encoding.html": [
        "0.271", "849", "[0, 1, 0, 0, 0, 0, 0, 0]", "[0, 1, 0, 0, 0, 0, 1, 1]", "[0, 1, 0, 0, 0, 1, 0, 0]",
        "6.44", "20.8", "229", "4.5", "2525", "0.41", "-0.83", "384", "786,432",
        "-10.7468", "-8.2811", "3.073", "1.824", "2.232",
    ],
    "book/corrections.html": [
        "229", "4.5", "0.41", "-0.83", "32,860", "0.3775", "0.6225",
        "unexpected keyword argument 'suppress'", "156,300", "1,563",
    ],
    "book/04_self_attention.html": [
        "0.691", "0.154", "0.807", "0.855", "0.048", "0.952", NEXT_SCORES,
        # zero-mean weights: the rows of weights and the context vectors differ ...
        "0.323", "0.366", "1.344",
        # ... unlike with all-positive ones (torch.rand)
        "0.48", "0.58", "0.110", "0.045",
    ],
    "book/05_scaling.html": [
        "32,860", "217,110", "0.276", "0.124", "0.112", "0.151", "0.337", "0.930", "-0.60", NEXT_SCORES,
        "0.524", "0.370",  # chapter 4's row of "next", before and after dividing by sqrt(d_k)
        "0.333", "0.109",  # a fresh nn.Linear: variance about 1/3, Var(q.k) about d_k / 9
    ],
    "book/06_causal_masking.html": ["0.0420 / 0.1142 / 0.8438", "0.2689 / 0.7311 / 0.0000", "0.3775 / 0.6225", "[nan, nan]"],
    "book/07_dropout.html": [
        "0.50, 0.00, 0.50, 0.00", "0.50, 0.00, 0.50, 0.48", "1.48",  # a dropped row need not sum to 1
        "0.00, 0.76, 0.00, 1.09, 0.83", "0.004",  # row sums of one draw; mean context vs no dropout
    ],
    "book/08_multi_head.html": ["0.80", "0.45"],
    "book/10_bert.html": [
        "50,260", "16,090,114", "3,283,330", "66,690",  # vocabulary; parameters
        "25,000 of 25,000", "2.0",  # chapter 1's tokenizer and tiktoken agree; tiktoken's speed
        "22,500", "2,500",  # the reviews chapter 11's first model learns from, and holds out
    ],
    "book/13_pretraining.html": [
        "86.5%", "92.76%", "7.02",  # Dai & Le; token frequencies alone
        "22,500", "49,261",  # chapter 11: the run's labelled reviews; the taught model's unlabelled
        "86.71%", "88.51%", "89.21%", "91.50%",  # labels alone; bag of words; taught; NBSVM
        "6.99", "7.04", "0.82",  # the recorded run: loss at [MASK] vs frequencies; at own tokens
        "-0.01", "-1.02 to +1.00",  # the snapshot validation chose, against the encoder from scratch
        "+5.05", "+2.05 to +8.06", "0.75 and 0.61",  # the GPT's gain with 1,000 labels; context
        "-0.14", "-0.12", "-0.23",  # equal terms: each objective's gain over the encoder from scratch
        "86.56%",  # the best Transformer chapter 13 trained, below bag of words
    ],
    "book/experiments_13.html": [
        "6,000", "1,600", "6.42", "2.1", "26.917", "6.47", "0.05",  # the recorded runs
        "1.7", "1.17",  # an ELECTRA step's cost; 128-token windows' speed
        "6.67", "0.403", "0.406", "26.8",  # ELECTRA's generator, discriminator, their sum
        "0.0003", "2026-11-30",  # the predictions: untrained at most; when the sentences were written
        "86.57%", "-0.01", "+0.28", "-0.40", "-0.39", "86.66%", "-0.09",  # fine-tuning arms
        "87.52%",  # the seed-by-seed fine-tuning (from scratch, seed 1's validation)
        "0.03, 0.03, 0.05",  # the sweep, below the frequencies at [MASK]
        "4,875", "71.78 ± 0.24",  # the GPT: the rates' snapshot; from scratch with 1,000 labels
        "1.767 and 1.778", "1.792 and 1.791", "1.793", "24,713",  # bits per byte; the bigrams
        "+5.05", "+2.35", "+2.24", "+2.36",  # the GPT's gains: 1,000, 2,500, all; at 42 minutes
        "-0.14", "-0.12", "-0.23", "86.56%", "89.21%",  # equal terms; the evidence table
    ],
    "book/running.html": [
        "5,407", "390", "559", "2.02", "1.33",  # glibc's default, 64 KiB and 16 MiB: MB, time
        "0.60",  # how the cpu preset was chosen: a bf16 step's time against float32's
        "12.9 times faster",  # timing on a quiet machine: chapter 12's cache at 511 tokens, recorded
        # glibc's default in the allocator benchmark: flat, then climbing; its last sample
        "held steady for 200 steps, then grew by about 31 MB per step", "after 350 of its 400 steps",
    ],
    "book/11_training.html": [
        "80.7%", "1,563", "156,300", "86.7%", "3.6", "40%", "216", "88.5%", "89.2%", "84.2%", "45,000",
        "-1.23", "-1.31", "-1.31 .. -0.43",  # "Not bad at all.": bad, Not, every token's share
        "93%", "99%",  # tokens pushing the way the verdict went: eight reviews, six test errors
        "49,261",  # the unlabelled reviews the served model also learned from
        "1.8 points below",  # the recorded run against bag of words: one run, the appendix's too
        # the control table: taught by NBSVM, the Transformer less bag of words taught alike
        "89.21%", "+0.12 points (95% interval -0.16 to +0.39",
        # the Transformer taught by its own untaught runs: its test, and what they lift it by
        "88.24%", "+0.89 points (95% interval +0.45 to +1.32",
        # the served arm against the counting models fitted on all 25,000 reviews
        "89.10%", "+0.58 points (95% interval +0.19 to +0.98",
        "-2.41 points (95% interval -2.80 to -2.01",
        "42.7%", "34.6% to 51.0%", "56.0%", "57.3%",  # the order pairs
        "61 of the 80", "p = 0.04",  # the written reviews and pairs
        "4.30", "2.78",  # t at 95% for three seeds and for five
        "+0.394", "+0.395",  # the box's model: A and beautifully, alike by position
        "23 of the 24", "19 of the 80",  # the box's parts on clear reviews; its written-set errors
    ],
    "book/experiments_11.html": [
        "87.52%", "-0.65 points (95% interval -1.01 to -0.29",  # counting on the 254 tokens read
        # the gap to bag of words: the preset's three seeds, beside chapter 11's one recorded run
        "is 1.65 points here", "1.8 points behind",
        "76.2%", "77.5%", "10 to 20",  # reviews written for the book; a coin on the word-order pairs
        "89.21%", "+2.32 points (95% interval +1.89 to +2.75",  # taught, chosen on blocks of films
        "+1.73 points (95% interval +1.54 to +1.92",  # teaching's gain, first read on test
        "89.10%", "+1.87 points (95% interval +0.85 to +2.90",  # and on sentences: the box's model
        "+5.94 points (95% interval +3.80 to +8.08",  # the box's model less NBSVM on labelled ones
        "159.70 for 2, 159.98 for 4, 160.30 for 8",  # sums of two accuracies, said as such
        "35 of 50", "64 of 150", "86 of 150",  # the order pairs: the check, served, the remedy
        "-0.78 points (95% interval -1.65 to +0.10",  # NBSVM given the served arm's inputs
        "4.302653, 2.776445, 2.262157",  # the package's t quantiles, the tables' to six decimals
        "1,408", "2,243", "6,712", "p = 0.16",  # the control table: updates; McNemar on seed 0
        "88.91%", "88.66%", "reverses 21",  # the order pairs' remedy; the written pairs
    ],
    "book/counting.html": [
        "91.2%",  # NBSVM on IMDB in Wang and Manning's paper
        "+0.93", "-1.27", "-0.17",  # the log-count ratio of good, bad and movie in four tiny reviews
        "0.6",  # Kneser-Ney's discount on the toy stream, by hand
        "2,000 of the 25,000 training",  # the demonstration's share of the training reviews
        "took 9 s and NBSVM 25 s",  # chapter 11's recorded times, not the demonstration's
    ],
    "book/web.html": [  # the JavaScript tokenizer's length, counted in the file the site serves
        f"again in {len((ROOT / '_static/web/bpe.mjs').read_text(encoding='utf-8').splitlines())} lines",
        "1.0 to 1.3 MB", "14.3 MB", "14 kB", "7.0 MB", "6.1 MB", "21.3 MB", "20.3 MB",  # bytes
    ],
    "book/12_gpt.html": [
        "74,042", "24,781", "109", "619,904", "13,312,000",  # data, the full run's reading
        "1.771", "1.793", "0.022",  # bits per byte: the GPT narrowly ahead of the bigram
        "505", "12.9", "2.8",  # the nucleus; the key/value cache's speed-ups
        "54.0%", "+8.0", "1.15",  # agreement (fine-tuned); judged, paired; likelihood ratio
        "49,261",  # the unlabelled reviews chapter 11's served model also learned from
        "1.0 times as fast", "4.7 times as fast", "52 tokens per second",  # the box's cache
        "312", "11.2 on 2",  # in Chromium: the long prompt's tokens; the machine's load
    ],
    "book/experiments_12.html": [
        "1,485,568", "13,312,000",  # the full run's parameters and tokens read
        "2.512", "1.771", "1.793", "1.805", "0.022", "1.2%",  # bits per byte: the GPT ahead
        "1.995",  # the shorter run, behind its own windows' bigram
        "505",  # the nucleus at the first step
        "54.0%", "31",  # agreement with the requested sentiment (fine-tuned); identical pairs
        "+8.0", "+0.00067", "1.15",  # judged, paired; likelihood (mean of per-review gaps)
    ],
    "book/09_transformer_block.html": [
        "0.655", "0.0607", "0.507", "1.603", "-0.873", "0.304", "-0.020", "-1.522",
        "0.0728", "0.059", "-0.170", "4,722,432", "2,360,064", "7,085,568", "85,026,816", "3072",
        # shortcuts: the seven width-64 layers keep gradients of one order, the first gets 2,110x
        "2.6e-02", "7.7e-02", "2,110", "1,315", "0.090",
    ],
}


# Numbers the chapters compute from the IMDB reviews themselves. A build without IMDB computes
# them on the stand-in corpus, shows other values and says so in its warning, so they are
# checked only on pages built from IMDB (CI's real-data build checks them all).
COMPUTED_FROM_IMDB: dict[str, set[str]] = {
    "book/01_tokenization.html": {"1,256"},
    "book/12_gpt.html": {"24,781", "109", "619,904"},
    "book/13_pretraining.html": {"7.02"},
    "book/counting.html": {"2,000 of the 25,000 training"},
}
STAND_IN_WARNING = "This page was computed on a generated stand-in"


def expected_numbers(page: str, text: str) -> list[str]:
    """The glued numbers `page` must show, given its visible `text`."""
    on_stand_in = STAND_IN_WARNING in text
    return [number for number in EXPECTED_IN_HTML[page]
            if not (on_stand_in and number in COMPUTED_FROM_IMDB.get(page, set()))]


def book_pages() -> list[str]:
    """Every page of the book, as paths under `_build/html`, in `_toc.yml` order."""
    return [Path(chapter).with_suffix(".html").as_posix() for chapter in book.toc_chapters(ROOT)]


def chapter_pages() -> list[str]:
    """The pages of the numbered part (the chapters, without the intro and the appendices)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [f"{entry['file']}.html" for part in toc["parts"] if part.get("numbered") for entry in part["chapters"]]


def catalogues(language: str = "zh_CN") -> dict[str, Path]:
    """The translated pages (docname -> catalogue) of an edition."""
    return translations.catalogues(ROOT, language)


CATALOGUES = catalogues()
