"""Hand-made annotation tables with their hand-worked expected values (ragmeter issue 7).

SINGLE: one QC ("qc"), four evaluators.
  qc:   i1 A, i2 B, i3 Tie, i4 flagged, i5 A, i6 B, i7 skipped, i8 flagged, i9 Tie, i10 A
  ann1: i1 A (match), i2 A (wrong), i3 Tie (tie agreed), i4 flagged (both flagged),
        i5 flagged (flag mismatch), i6 B but skipped, i7 A (QC skipped), i8 B (flag mismatch),
        i9 A (wrong: QC said Tie), i11 A (not annotated by QC)
        -> total 7, mismatch 2 (28.571%), applicable 4, matches 2, reliability 0.5, kappa 3/11,
           skipped 2, not_in_qc 1
  ann2: i4 flagged, i8 flagged (both flagged), i5 A (match)
        -> total 3, mismatch 0, applicable 1, matches 1, reliability 1.0
  ann3: i4 A (mismatch), i2 flagged (mismatch), i8 flagged (both flagged)
        -> total 3, mismatch 2 (66.667%), applicable 0, reliability null
  ann4: i12 A only -> not_in_qc 1, total 0, everything null
  overall: pooled (2+1+0)/(4+1+0) = 0.6; mean of reliabilities (0.5+1.0)/2 = 0.75 (n=2);
  flag mismatch pooled 4/13; QC items 9 (i7 skipped), flagged 2 -> 22.222%;
  items not in QC {i11, i12} = 2.

MULTI: three QC (q1, q2, q3), one evaluator "e".
  j1: A A B -> A (2/3)          e: A  match
  j2: A B Tie -> no majority    e: A  excluded (no consensus)
  j3: flag flag A -> flagged    e: A  flag mismatch
  j4: A skip B -> 1 vs 1, none  e: B  excluded (no consensus)
  j5: B skip skip -> B (1/1)    e: B  match
  j6: skip skip skip -> skipped e: A  skipped
  j7: A (q1 only) -> A          e: B  wrong
  j8: (no QC)                   e: A  not in QC
  -> total 4, mismatch 1 (25%), applicable 3, matches 2, reliability 2/3, no consensus 2,
     skipped 1, not_in_qc 1; QC items 4 (j1 j3 j5 j7), flagged 1 -> 25%.
"""

from __future__ import annotations


def row(item: str, evaluator: str, verdict: str, skipped: bool = False) -> dict[str, object]:
    """``verdict`` is a choice, "flag" for flagged, or "" for a skipped row without verdict."""
    if verdict == "flag":
        return {"item_id": item, "evaluator": evaluator, "item_flag": "Yes", "choice": "",
                "skipped": skipped}
    return {"item_id": item, "evaluator": evaluator, "item_flag": "No" if verdict else "",
            "choice": verdict, "skipped": skipped}


SINGLE = [
    row("i1", "qc", "A"), row("i2", "qc", "B"), row("i3", "qc", "Tie"), row("i4", "qc", "flag"),
    row("i5", "qc", "A"), row("i6", "qc", "B"), row("i7", "qc", "", skipped=True),
    row("i8", "qc", "flag"), row("i9", "qc", "Tie"), row("i10", "qc", "A"),
    row("i1", "ann1", "A"), row("i2", "ann1", "A"), row("i3", "ann1", "Tie"),
    row("i4", "ann1", "flag"), row("i5", "ann1", "flag"), row("i6", "ann1", "B", skipped=True),
    row("i7", "ann1", "A"), row("i8", "ann1", "B"), row("i9", "ann1", "A"),
    row("i11", "ann1", "A"),
    row("i4", "ann2", "flag"), row("i8", "ann2", "flag"), row("i5", "ann2", "A"),
    row("i4", "ann3", "A"), row("i2", "ann3", "flag"), row("i8", "ann3", "flag"),
    row("i12", "ann4", "A"),
]

MULTI = [
    row("j1", "q1", "A"), row("j1", "q2", "A"), row("j1", "q3", "B"),
    row("j2", "q1", "A"), row("j2", "q2", "B"), row("j2", "q3", "Tie"),
    row("j3", "q1", "flag"), row("j3", "q2", "flag"), row("j3", "q3", "A"),
    row("j4", "q1", "A"), row("j4", "q2", "", skipped=True), row("j4", "q3", "B"),
    row("j5", "q1", "B"), row("j5", "q2", "", skipped=True), row("j5", "q3", "", skipped=True),
    row("j6", "q1", "", skipped=True), row("j6", "q2", "", skipped=True),
    row("j6", "q3", "", skipped=True),
    row("j7", "q1", "A"),
    row("j1", "e", "A"), row("j2", "e", "A"), row("j3", "e", "A"), row("j4", "e", "B"),
    row("j5", "e", "B"), row("j6", "e", "A"), row("j7", "e", "B"), row("j8", "e", "A"),
]
