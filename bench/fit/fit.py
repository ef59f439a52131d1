#!/usr/bin/env python3
"""Fits the learned ranker on the corpus's candidates and measures it leaving one schema out.

    bench/fit/fit.py FEATURES [--extra FEATURES ...] [--before ANSWERS] [--out MODEL.onnx]
                     [--model gbdt|linear] [--drop a,b]

FEATURES is what `wayfinder eval --features` wrote over the whole corpus (bench/fit/run.sh runs
it): a line naming the features, then one line per question with its candidates and their rows.
ANSWERS is `wayfinder eval --out` of the same run: today's ranking, the "before" column.
Each `--extra` is a dump of the same corpus through another tuning of the model: the same
questions with other similarities, so more rows to fit on (left out with their schema as
FEATURES' are, never measured); what is measured and shipped ranks with FEATURES' tuning.

For every schema, a model is fitted on the other schemas' questions and scores the left-out
schema's candidates; the figures per schema, per style and pooled are printed beside today's.
Then one model is fitted on every schema and written to MODEL (ONNX, a ranking score per
candidate row; the engine reads its trees and evaluates them, workers/src/rank/trees.rs) with MODEL.json beside it (feature
names, settings, the figures). `--drop` leaves features out of the fit and of MODEL: to measure
a feature, or to fit a dump of an older build for this one (the engine refuses a ranker that
reads other features than it computes). Everything is seeded: the same corpus gives the same
file.
"""

import argparse
import collections
import hashlib
import json
import sys

import numpy as np

SEED = 20261127
SINGLE = ("question", "keywords", "action")
# Settings of the boosted trees. Chosen once (not per schema); the leave-one-schema-out figures
# are what they are measured by. 100 trees at 0.15 rank as 300 at 0.05 did (bench/HISTORY.md),
# in a third of the time a search spends scoring; 31 leaves rank no better and score slower.
GBDT = dict(
    objective="lambdarank",
    n_estimators=100,
    learning_rate=0.15,
    num_leaves=15,
    min_child_samples=40,
    subsample=0.8,
    subsample_freq=1,
    colsample_bytree=0.8,
    reg_lambda=1.0,
    lambdarank_truncation_level=60,
    label_gain=[0, 1],
    random_state=SEED,
    deterministic=True,
    force_row_wise=True,
    n_jobs=2,
    verbose=-1,
)


def set_values(settings, assignments):
    """Gives `settings` the values of `--set NAME=VALUE` assignments (VALUE is JSON); exits
    naming an assignment to no setting."""
    for assignment in assignments:
        name, _, value = assignment.partition("=")
        if name not in settings:
            sys.exit(f"--set {assignment}: no setting `{name}` (settings: {', '.join(settings)})")
        settings[name] = json.loads(value)


def read_features(path):
    with open(path, encoding="utf-8") as lines:
        names = json.loads(next(lines))["names"]
        questions = []
        for line in lines:
            q = json.loads(line)
            if q.get("pair"):
                q["style"] = "description"
            elif q["style"] is None:
                continue
            q["rows"] = np.asarray(q["rows"], dtype=np.float32).reshape(-1, len(names))
            expected = set(q["expected"])
            q["labels"] = np.array([c in expected for c in q["candidates"]], dtype=np.int32)
            questions.append(q)
    return names, questions


def ranks_of(q, scores):
    """1-based rank of each expected coordinate in the candidates ordered by `scores`."""
    order = np.lexsort((np.array(q["candidates"]), -scores))
    place = {q["candidates"][i]: r + 1 for r, i in enumerate(order)}
    return [place.get(c) for c in q["expected"]]


def metrics(found_by_question, styles):
    """R@1/5/10 and MRR@10 for single-member styles, field recall@20/@50 for tasks."""
    out = {}
    by_style = collections.defaultdict(list)
    for found, style in zip(found_by_question, styles):
        by_style[style].append(found)
    for style, founds in by_style.items():
        if style == "task":
            share = lambda f, k: sum(1 for r in f if r is not None and r <= k) / len(f)
            out[style] = {
                "n": len(founds),
                "FR@20": float(np.mean([share(f, 20) for f in founds])),
                "FR@50": float(np.mean([share(f, 50) for f in founds])),
            }
        else:
            first = [min([r for r in f if r is not None], default=None) for f in founds]
            within = lambda k: float(np.mean([r is not None and r <= k for r in first]))
            out[style] = {
                "n": len(founds),
                "R@1": within(1),
                "R@5": within(5),
                "R@10": within(10),
                "MRR@10": float(np.mean([1 / r if r is not None and r <= 10 else 0 for r in first])),
            }
    single = [
        min([r for r in f if r is not None], default=None)
        for f, s in zip(found_by_question, styles)
        if s in SINGLE
    ]
    if single:
        out["single"] = {
            "n": len(single),
            "R@5": float(np.mean([r is not None and r <= 5 for r in single])),
            "R@10": float(np.mean([r is not None and r <= 10 for r in single])),
        }
    return out


def fit_gbdt(questions):
    import lightgbm

    train = [q for q in questions if q["labels"].any()]
    x = np.concatenate([q["rows"] for q in train])
    y = np.concatenate([q["labels"] for q in train])
    groups = [len(q["rows"]) for q in train]
    model = lightgbm.LGBMRanker(**GBDT)
    model.fit(x, y, group=groups)
    return model


def fit_linear(questions):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    train = [q for q in questions if q["labels"].any()]
    x = np.concatenate([q["rows"] for q in train])
    y = np.concatenate([q["labels"] for q in train])
    model = make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=2000))
    model.fit(x, y)
    return model


def score(model, rows):
    if len(rows) == 0:
        return np.zeros(0)
    if hasattr(model, "predict_proba"):
        return model.decision_function(rows)
    return model.predict(rows)


def table(title, rows):
    print(title)
    for row in rows:
        print("  " + row)


def fmt(m, style):
    if style == "task":
        return f"FR@20 {m['FR@20']:.3f} FR@50 {m['FR@50']:.3f}" if m else "-"
    return (f"R@1 {m['R@1']:.3f} R@5 {m['R@5']:.3f} R@10 {m['R@10']:.3f} MRR {m['MRR@10']:.3f}"
            if m else "-")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("features")
    parser.add_argument("--before", help="`wayfinder eval --out` answers of today's ranking")
    parser.add_argument("--out", help="where to write the fitted ONNX model")
    parser.add_argument("--model", choices=["gbdt", "linear"], default="gbdt")
    parser.add_argument("--drop", default="", help="comma-separated features left out")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--answers", help="write each question's left-out ranking here (top 10 and ranks found)")
    parser.add_argument("--no-pairs", action="store_true", help="fit without the description pairs")
    parser.add_argument("--extra", action="append", default=[], metavar="FEATURES",
                        help="another dump of the same corpus (another tuning's features) whose "
                             "rows are fitted on, leaving out the same schema, and never measured")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="another value for one of the boosted trees' settings (GBDT), to measure it")
    args = parser.parse_args()
    set_values(GBDT, args.set)

    names, questions = read_features(args.features)
    if args.no_pairs:
        questions = [q for q in questions if q["style"] != "description"]
    dropped = {n for n in args.drop.split(",") if n}
    if dropped - set(names):
        sys.exit(f"--drop: no feature {', '.join(sorted(dropped - set(names)))} in {args.features}")
    kept = [i for i, n in enumerate(names) if n not in dropped]
    names = [names[i] for i in kept]
    for q in questions:
        q["rows"] = q["rows"][:, kept]
    extra = []
    for path in args.extra:
        extra_names, more = read_features(path)
        if [n for n in extra_names if n not in dropped] != names:
            sys.exit(f"--extra {path}: other features than {args.features}")
        for q in more:
            q["rows"] = q["rows"][:, [extra_names.index(n) for n in names]]
        extra += [q for q in more if not (args.no_pairs and q["style"] == "description")]
    fit = fit_gbdt if args.model == "gbdt" else fit_linear
    schemas = sorted({q["schema"] for q in questions if q["style"] != "description"})
    before = {}
    if args.before:
        with open(args.before, encoding="utf-8") as lines:
            for line in lines:
                a = json.loads(line)
                before[a["id"]] = a["found"]

    after_found, before_found, styles, per_schema = {}, {}, {}, {}
    answers = open(args.answers, "w", encoding="utf-8") if args.answers else None
    for schema in schemas:
        # A schema's description pairs are fitted on when it is not the one left out, and never
        # measured.
        held = [q for q in questions if q["schema"] == schema and q["style"] != "description"]
        model = fit([q for q in questions + extra if q["schema"] != schema])
        for q in held:
            scores = score(model, q["rows"])
            after_found[q["id"]] = ranks_of(q, scores)
            styles[q["id"]] = q["style"]
            if answers:
                top = [q["candidates"][i] for i in np.argsort(-scores, kind="stable")[:10]]
                answers.write(json.dumps({"id": q["id"], "query": q.get("query"), "style": q["style"],
                                          "expected": q["expected"], "found": after_found[q["id"]],
                                          "top": top}) + "\n")
        ids = [q["id"] for q in held]
        per_schema[schema] = {
            "after": metrics([after_found[i] for i in ids], [styles[i] for i in ids]),
            "before": metrics([before[i] for i in ids], [styles[i] for i in ids]) if before else {},
        }

    def row(label, m):
        single = m.get("single", {})
        task = m.get("task", {})
        return (f"{label:<12} n {single.get('n', 0):>4} R@5 {single.get('R@5', float('nan')):.3f}  "
                f"tasks {task.get('n', 0):>3} FR@20 {task.get('FR@20', float('nan')):.3f} "
                f"FR@50 {task.get('FR@50', float('nan')):.3f}")

    print(f"leave one schema out, {args.model}, {len(questions)} questions, {len(names)} features")
    for schema in schemas:
        m = per_schema[schema]
        if before:
            print(row(schema + " before", m["before"]))
        print(row(schema + " after", m["after"]))
    ids = list(after_found)
    pooled_after = metrics([after_found[i] for i in ids], [styles[i] for i in ids])
    pooled_before = metrics([before[i] for i in ids], [styles[i] for i in ids]) if before else {}
    print("pooled by style")
    for style in ("question", "keywords", "action", "task"):
        if style in pooled_after:
            if before:
                print(f"  {style:<9} before {fmt(pooled_before.get(style), style)}")
            print(f"  {style:<9} after  {fmt(pooled_after.get(style), style)}")
    if before:
        print(row("POOLED before", pooled_before))
    print(row("POOLED after", pooled_after))

    figures = {"per_schema": per_schema, "pooled": {"after": pooled_after, "before": pooled_before}}
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(figures, f, indent=1)
    if args.out:
        write_model(fit(questions + extra), names, questions, args, figures)


def calibration(model, questions):
    """(a, b) so that 1 / (1 + exp(-(a s + b))) is the chance a candidate scored s is expected
    (Platt scaling over every candidate of the corpus): the score `minScore` compares."""
    from sklearn.linear_model import LogisticRegression

    raw = np.concatenate([score(model, q["rows"]) for q in questions if len(q["rows"])])
    labels = np.concatenate([q["labels"] for q in questions if len(q["rows"])])
    platt = LogisticRegression(C=1e6, max_iter=1000).fit(raw.reshape(-1, 1), labels)
    return [float(platt.coef_[0][0]), float(platt.intercept_[0])]


def write_model(model, names, questions, args, figures):
    if args.model != "gbdt":
        sys.exit("fit: only the boosted trees are exported")
    from onnxmltools import convert_lightgbm
    from onnxmltools.convert.common.data_types import FloatTensorType

    onnx_model = convert_lightgbm(
        model.booster_, initial_types=[("features", FloatTensorType([None, len(names)]))],
        target_opset=15, zipmap=False)
    onnx_model.doc_string = f"wayfinder ranker over {len(names)} features"
    # The converter names the graph with a random UUID: a fixed name keeps the file reproducible.
    onnx_model.graph.name = "wayfinder_ranker"
    data = onnx_model.SerializeToString()
    with open(args.out, "wb") as f:
        f.write(data)
    def sha256(path):
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    meta = {
        "features": names,
        # The chance a question's candidate is expected: the pairs' candidates are not asked.
        "calibration": calibration(model, [q for q in questions if q["style"] != "description"]),
        "model": args.model,
        "settings": GBDT,
        "seed": SEED,
        "features_sha256": sha256(args.features),
        "extra_features_sha256": [sha256(path) for path in args.extra],
        "dropped": sorted(n for n in args.drop.split(",") if n),
        "model_sha256": hashlib.sha256(data).hexdigest(),
        "leave_one_schema_out": figures["pooled"],
    }
    with open(args.out + ".json", "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print(f"wrote {args.out} ({len(data)} bytes)")


if __name__ == "__main__":
    main()
