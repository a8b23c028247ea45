"""The table of bench/search_table.sh, from its work directory (see there).

    python3 search_table_report.py TUNETOP WORK "BUDGETS" "OPS" "ARMS" SESSIONS.tsv"""
import json
import os
import subprocess
import sys
from statistics import median

tt, work, budgets, ops, arms, sess_path = sys.argv[1:7]
budgets = [int(b) for b in budgets.split()]
ops, arms = ops.split(), arms.split()
FLOPS = {"conv2d": 2 * 64 * 56 * 56 * 64 * 9, "dense": 2 * 1000 * 512, "matmul": 2 * 1024 ** 3}
HAS_TEMPLATE = ("conv2d", "dense", "matmul")
MAX = max(budgets)

sessions = {}  # (op, arm) -> [(budget, start, end, rc, load0, load1)] by start
for line in open(sess_path):
    f = line.rstrip("\n").split("\t")
    if len(f) < 8:
        continue
    sessions.setdefault((f[0], f[1]), []).append((int(f[2]), float(f[3]), float(f[4]), int(f[5]), f[6], f[7]))
for v in sessions.values():
    v.sort(key=lambda s: s[1])


_dumped = {}


def tunetop_records(op, arm):
    path = f"{work}/{op}.{arm}.log"
    if not os.path.exists(path):
        return []
    if path in _dumped:
        return _dumped[path]
    out = subprocess.run([tt, "dump", path], capture_output=True, text=True).stdout
    recs = []
    for line in out.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            ok = r["err"] == 0 and r.get("costs")
            # the kernel's whole time: its runs plus the layout transforms timed apart
            # (tt_pack + tt_finish: a template's blocked layouts, Winograd's input transform)
            lat = median(r["costs"]) + (r.get("pack_s") or 0) if ok else None
            # when its measurement came back: the record is stamped as the run starts
            recs.append((r["ts"] + (r.get("run_s") or 0), lat, r.get("tmpl")))
            if not sessions.get((op, arm)) and len(recs) == 1:
                # a session still running or stopped (no line in sessions.tsv): it started
                # about when its first record was built and measured
                t0 = r["ts"] - (r.get("build_s") or 0) - (r.get("run_s") or 0)
                sessions[(op, arm)] = [(0, t0, float("inf"), -1, "?", "?")]
    _dumped[path] = recs
    return recs


def ms_records(op, b):
    """MetaSchedule: the smallest finished session of at least b trials, else one stopped early
    (its records come in the order of measurement: the first b, or all it has, marked 'only n')."""
    for ses in sorted(sessions.get((op, "metaschedule"), []), key=lambda s: (s[3] != 0, s[0])):
        path = f"{work}/{op}.metaschedule.{ses[0]}.jsonl"
        if ses[0] < b or not os.path.exists(path):
            continue
        rows = [json.loads(l) for l in open(path) if l.strip()]
        recs = [(r["t"], r["s"]) for r in rows if "i" in r]
        if ses[3] == 0 or recs:
            return recs, [ses]
    return None, None


def figures(op, arm, b):
    """(best s, trials to 95%, wall s, n, loads) at budget b, or None (with why)."""
    if arm == "metaschedule":
        recs, segs = ms_records(op, b)
        if recs is None:
            return None, "not run"
        recs = recs[:b]
        wall = recs[-1][0] if recs else 0
    else:
        recs = tunetop_records(op, arm)
        segs = [s for s in sessions.get((op, arm), [])]
        partial = segs and segs[-1][3] == -1  # unfinished: what it measured so far
        if not any(s[0] >= b for s in segs) and not (partial and len(recs) >= b):
            return None, "not run"
        recs = recs[:b]
        if not recs:
            return None, "no records"
        # wall time: every earlier session whole, plus this one up to the b-th record
        ts, wall = recs[-1][0], 0.0
        for s in segs:
            if s[1] >= ts:
                break
            wall += min(ts, s[2]) - s[1]
    best, curve = None, []
    for _, c, *_ in recs:
        if c is not None and (best is None or c < best):
            best = c
        curve.append(best)
    if best is None:
        return None, "no valid candidate"
    to95 = next(i + 1 for i, c in enumerate(curve) if c is not None and c <= best / 0.95)
    used = [s for s in segs if arm == "metaschedule" or s[1] < recs[-1][0]]
    lv = sorted(float(x) for s in used for x in (s[4], s[5]) if x != "?")
    loads = f"{lv[0]:.1f}-{lv[-1]:.1f}" if lv else "-"
    return (best, to95, wall, len(recs), loads), ""


def first_time_at(op, arm, target_s):
    """Seconds from the start until arm's running best is at most target_s (None: never)."""
    segs = sessions.get((op, arm), [])
    recs = tunetop_records(op, arm)
    for ts, c, *_ in recs:
        if c is not None and c <= target_s:
            wall = 0.0
            for s in segs:
                if s[1] >= ts:
                    break
                wall += min(ts, s[2]) - s[1]
            return wall
    return None


def trials_to(op, arm, b, goal_s):
    """The trial at which arm's running best first reaches goal_s within b trials (None: never)."""
    return next((i + 1 for i, (_, c, *_) in enumerate(tunetop_records(op, arm)[:b]) if c is not None and c <= goal_s),
                None)


def fmt_us(s):
    return f"{s * 1e6:.0f}" if s >= 1e-4 else f"{s * 1e6:.1f}"


fig = {}
print()
print("| op | trials | arm | best us | GFLOPS | trials to 95% | wall s | load | vs template | vs MetaSchedule |")
print("|---|---|---|---|---|---|---|---|---|---|")
for op in ops:
    for b in budgets:
        for arm in arms:
            if arm == "template" and op not in HAS_TEMPLATE:
                continue
            f, why = figures(op, arm, b)
            fig[(op, arm, b)] = f
        for arm in arms:
            if arm == "template" and op not in HAS_TEMPLATE:
                continue
            f = fig[(op, arm, b)]
            if f is None:
                print(f"| {op} | {b} | {arm} | not run | | | | | | |")
                continue
            best, to95, wall, n, loads = f
            g = f"{FLOPS[op] / best * 1e-9:.1f}" if op in FLOPS else "-"
            rel = []
            for ref in ("template", "metaschedule"):
                r = fig.get((op, ref, b))
                rel.append(f"{r[0] / best:.2f}x" if r and arm != ref else "-")
            note = "" if n >= b else f" (only {n})"
            print(f"| {op} | {b} | {arm} | {fmt_us(best)} | {g} | {to95} | {wall:.0f}{note} | {loads} | {rel[0]} | {rel[1]} |")

# the same, one row per op and budget (best us, trials to 95%, wall s; "-": not run)
print()
print("| op | trials | " + " | ".join(arms) + " |")
print("|---|---|" + "---|" * len(arms))
for op in ops:
    for b in budgets:
        cells = []
        for arm in arms:
            f = fig.get((op, arm, b))
            if arm == "template" and op not in HAS_TEMPLATE:
                cells.append("none")
            elif f is None:
                cells.append("-")
            else:
                cells.append(f"{fmt_us(f[0])}, {f[1]}, {f[2]:.0f} s" + ("" if f[3] >= b else f" (only {f[3]})"))
        print(f"| {op} | {b} | " + " | ".join(cells) + " |")

# the vendors
blas = None
if os.path.exists(f"{work}/openblas.json") and os.path.getsize(f"{work}/openblas.json"):
    blas = json.load(open(f"{work}/openblas.json"))
ort = {}
if os.path.exists(f"{work}/ort.jsonl"):
    for line in open(f"{work}/ort.jsonl"):
        if line.strip():
            r = json.loads(line)
            ort[r["op"]] = r


def largest(op, arm):
    for b in sorted(budgets, reverse=True):
        if fig.get((op, arm, b)):
            return b, fig[(op, arm, b)]
    return None, None


print()
print("| op | tunetop sketch best us (trials) | vendor | vendor median us | vendor min us | ratio vs median | ratio vs min |")
print("|---|---|---|---|---|---|---|")
vend = {}
for op in ops:
    if op == "matmul":
        v = ("OpenBLAS cblas_sgemm", blas["ms"] * 1e3, blas["min_ms"] * 1e3) if blas else None
    elif op in ort:
        v = (f"ONNX Runtime {ort[op]['ort']}", ort[op]["us"], ort[op]["min_us"])
    else:
        continue
    b, f = largest(op, "sketch")
    if v is None or f is None:
        print(f"| {op} | {'-' if f is None else fmt_us(f[0])} | {v[0] if v else 'vendor not timed'} | | | | |")
        continue
    us = f[0] * 1e6
    vend[op] = (v[1] / us, v[2] / us, b)
    print(f"| {op} | {us:.0f} ({b}) | {v[0]} | {v[1]:.0f} | {v[2]:.0f} | {v[1] / us:.2f}x | {v[2] / us:.2f}x |")

# the targets
print()
print("| target | op | figure | met |")
print("|---|---|---|---|")


def row(target, op, figure, met):
    print(f"| {target} | {op} | {figure} | {'yes' if met is True else 'no' if met is False else met} |")


for op in ops:
    sk = {b: fig.get((op, "sketch", b)) for b in budgets}
    if op in ("conv2d", "dense"):
        b = 1000 if 1000 in budgets else MAX
        t = fig.get((op, "template", b))
        if sk.get(b) and t:
            each = {}  # the template arm's best per template (conv2d: direct and Winograd)
            for _, c, tmpl in tunetop_records(op, "template")[:b]:
                if c is not None and (tmpl not in each or c < each[tmpl]):
                    each[tmpl] = c
            per = "; ".join(f"{each[k] / sk[b][0]:.2f}x {k} ({fmt_us(each[k])} us)" for k in sorted(each))
            row(f"sketch >= 0.95x template at {b}", op, f"{t[0] / sk[b][0]:.2f}x" + (f" (of each: {per})" if len(each) > 1 else ""),
                t[0] / sk[b][0] >= 0.95)
        else:
            row(f"sketch >= 0.95x template at {b}", op, "-", "not run")
    for b, need in ((64, 1.5), (200, 1.2)):
        if b not in budgets:
            continue
        m = fig.get((op, "metaschedule", b))
        if sk.get(b) and m:
            row(f"sketch >= {need}x MetaSchedule at {b}", op, f"{m[0] / sk[b][0]:.2f}x", m[0] / sk[b][0] >= need)
        else:
            row(f"sketch >= {need}x MetaSchedule at {b}", op, "-", "not run")
    mb, m = largest(op, "metaschedule")
    if m:
        label = "MetaSchedule's 1000-trial best" if mb == 1000 else f"MetaSchedule's best (at {mb}: 1000 not run)"
        if m[3] < mb:
            label = f"MetaSchedule's best (stopped after {m[3]} of {mb} trials)"
        t = first_time_at(op, "sketch", m[0])
        if t is None:
            bsk = largest(op, "sketch")[1]
            row(f"sketch reaches {label} in <= 1/10 of its wall", op,
                f"never (sketch {fmt_us(bsk[0]) if bsk else '-'} us vs {fmt_us(m[0])} us)", False)
        else:
            row(f"sketch reaches {label} in <= 1/10 of its wall", op,
                f"{t:.1f} s vs {m[2]:.0f} s: 1/{m[2] / t:.0f}" if t > 0 else "at once", t <= m[2] / 10)
    else:
        row("sketch reaches MetaSchedule's 1000-trial best in <= 1/10 of its wall", op, "-", "not run")
    bb = [b for b in budgets if sk.get(b) and fig.get((op, "random", b))]
    if bb:
        b = max(bb)
        r = fig[(op, "random", b)]
        row(f"trials to 95% of its own best <= 1/3 of random's (at {b})", op, f"{sk[b][1]} vs {r[1]}",
            sk[b][1] * 3 <= r[1])
        # the same mark, common: 95% of the better of the two arms' bests (random may never get there)
        goal = min(sk[b][0], r[0]) / 0.95
        ts, tr = trials_to(op, "sketch", b, goal), trials_to(op, "random", b, goal)
        row(f"trials to 95% of the better arm's best ({fmt_us(goal * 0.95)} us) <= 1/3 of random's (at {b})", op,
            f"{ts if ts else f'never in {b}'} vs {tr if tr else f'never in {b}'}",
            ts is not None and ts * 3 <= (tr if tr else b + 1))
    else:
        row("trials to 95% <= 1/3 of random", op, "-", "not run")
    recs = tunetop_records(op, "sketch")
    b, f = largest(op, "sketch")
    if recs and recs[0][1] is not None and f:
        z = f[0] / recs[0][1]
        row(f"zero-trial default >= 0.8x the {b}-trial best" + ("" if b == 1000 else " (1000 not run)"), op,
            f"{z:.2f}x ({fmt_us(recs[0][1])} us)", z >= 0.8)
    else:
        row("zero-trial default >= 0.8x the 1000-trial best", op, "-", "not run")
    if op in vend:
        vm, vmin, b = vend[op]
        if op == "matmul":
            row(f"matmul >= 0.8x OpenBLAS (floor), >= 1.0x (goal), sketch at {b}", op,
                f"{vm:.2f}x of median, {vmin:.2f}x of min", "floor " + ("yes" if vmin >= 0.8 else "no") +
                ", goal " + ("yes" if vmin >= 1.0 else "no"))
        else:
            row(f"faster than ONNX Runtime (sketch at {b})", op, f"{vm:.2f}x of median, {vmin:.2f}x of min",
                vmin > 1.0)
print()
print("tunetop's latency is a record's latency (the median of its repeats, each the mean of its runs) plus its layout transforms (pack_s, timed apart); GFLOPS "
      "count the direct computation's FLOPs for every arm (a Winograd template's are effective GFLOPS). "
      "Trials to 95%: of the arm's own best at that budget. Wall: from the session's start (a resumed session "
      "adds its own). Load: the 1-minute load average at the sessions' start and end. Vendor ratios: vendor time "
      "over tunetop's (above 1: tunetop faster); 'met' is judged against the vendor's fastest repeat, since tunetop's "
      "best is the fastest of its candidates. tunetop's figure is the tuner's own measurement (the best record's "
      "median repeat); MetaSchedule's the mean run time its runner reports; the vendors are timed by the scripts in the same run.")
