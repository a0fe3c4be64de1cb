# python docs/bench/2026-11-27-x4-paper-cell/nltk_check.py results/paper/lano_cfg3f_8L512D/lano_paper_ABCD_lr1e-3/eval_samples.jsonl
"""Recompute every verdict of eval_samples.jsonl with nltk's chart parser (the independent oracle
of tests/test_grammar_oracle.py), not the project's recognizer."""
import json, sys
sys.path.insert(0, "tests")
from test_grammar_oracle import nltk_accepts_and_count
from playground.grammar import load_grammar
g = load_grammar("cfg3f")
rows = [json.loads(x) for x in open(sys.argv[1])]
agree = 0
for r in rows:
    words = r["text"].split()
    ok = r["stopped"] and bool(words) and nltk_accepts_and_count(g, words, count=False)[0]
    agree += ok == r["accepted"]
    if ok != r["accepted"]:
        print("DISAGREE", r["sample"], ok, r["accepted"], flush=True)
acc = sum(r["accepted"] for r in rows)
print(json.dumps({"samples": len(rows), "accepted": acc, "gen_acc": acc / len(rows),
                  "nltk_agrees": agree}))
