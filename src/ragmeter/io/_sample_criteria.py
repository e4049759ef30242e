"""The built-in criteria sample, written by the ragmeter authors (Apache-2.0): twelve bicycle
maintenance questions (brakes, tyres, drivetrain, wheels, workshop), each with a reference
answer and three answers of different quality, scored by hand on the shipped criteria (relevance 1-5, correctness 1-5,
completeness 0-2).  Kept as data and materialized on first use (``sample_path
("criteria_answers.jsonl")``), like the multilingual sample, so that no data file in the
repository has the shape of a third-party run."""

from __future__ import annotations

__all__ = ["criteria_sample_rows"]

# query id -> (topic, question, reference answer)
_QUESTIONS: dict[str, tuple[str, str, str]] = {
    "q01": ("brakes",
            "How do I stop my disc brakes from squealing?",
            "Squealing is often caused by oil on the rotor: clean the rotor with isopropyl "
            "alcohol and lightly sand the pads. New pads also need bedding in: brake firmly about"
            " twenty times from a moderate speed without locking the wheel."),
    "q02": ("brakes",
            "Which fluid goes into hydraulic disc brakes?",
            "The fluid the manufacturer specifies: mineral oil for some brands, DOT fluid for "
            "others. Never mix the two."),
    "q03": ("tyres",
            "What pressure should mountain bike tyres have?",
            "Between 25 and 35 psi, depending on the rider's weight."),
    "q04": ("tyres",
            "How do I repair a punctured inner tube?",
            "Remove the tube, find the hole by pumping it up and listening, roughen the area and "
            "apply a patch with vulcanising solution. Before refitting, check the tyre for the "
            "thorn or glass that caused the flat."),
    "q05": ("tyres",
            "How often should tubeless sealant be topped up?",
            "Every two to six months, because the sealant dries out."),
    "q06": ("drivetrain",
            "When is a chain worn out?",
            "When it has stretched by 0.5 percent on an 11- or 12-speed drivetrain, or 0.75 "
            "percent on older drivetrains; a chain checker measures this."),
    "q07": ("drivetrain",
            "How do I lubricate a bicycle chain?",
            "Clean it with a degreaser, dry it, apply one drop of lubricant per roller and wipe "
            "off the excess."),
    "q08": ("drivetrain",
            "Why do my gears skip after fitting a new chain?",
            "The cassette is probably worn as well and should be replaced."),
    "q09": ("drivetrain",
            "What do the H and L screws on a derailleur do?",
            "They are the limit screws: they stop the chain from falling off the smallest (H) and"
            " the largest (L) sprockets."),
    "q10": ("wheels",
            "How do I true a wobbly wheel?",
            "Tighten and loosen spokes a quarter turn at a time while watching the rim against "
            "the callipers of a truing stand."),
    "q11": ("workshop",
            "When is the workshop open?",
            "On Tuesday and Thursday evenings from six to nine, and on Saturday mornings."),
    "q12": ("workshop",
            "How much does membership cost?",
            "30 euros a year, including the use of every workshop tool and one free service."),
}

# (row id, query id, response, (relevance, correctness, completeness) by hand)
_ANSWERS: tuple[tuple[str, str, str, tuple[int, int, int]], ...] = (
    ("c01", "q01",
     "Clean the rotor with isopropyl alcohol and sand the pads lightly. If the pads are new, bed "
     "them in with about twenty firm stops from a moderate speed.",
     (5, 5, 2)),
    ("c02", "q01",
     "Spray some chain lube on the rotor so the pads slide more quietly.",
     (5, 1, 0)),
    ("c03", "q01",
     "Squealing brakes are annoying. Brake pads come in organic and sintered compounds, and "
     "sintered pads last longer in the wet.",
     (2, 1, 0)),
    ("c04", "q02",
     "Whatever the manufacturer specifies: mineral oil for some brands, DOT fluid for others. "
     "Don't mix them.",
     (5, 5, 2)),
    ("c05", "q02",
     "DOT fluid.",
     (5, 3, 1)),
    ("c06", "q02",
     "Mineral oil, but check your manual because some brands use DOT fluid; never mix the two. "
     "Bleed them once a year as well.",
     (4, 4, 2)),
    ("c07", "q03",
     "Between 25 and 35 psi, a little more for heavier riders.",
     (5, 5, 2)),
    ("c08", "q03",
     "Road tyres usually run between 80 and 100 psi. Mountain biking is great fun on trails, and "
     "a pump with a gauge is worth buying.",
     (2, 1, 0)),
    ("c09", "q03",
     "About 30 psi.",
     (5, 5, 1)),
    ("c10", "q04",
     "Take the tube out, pump it up and listen for the hole, roughen around it and glue on a "
     "patch with vulcanising solution. Check inside the tyre for whatever caused the flat before "
     "you put it back.",
     (5, 5, 2)),
    ("c11", "q04",
     "Find the hole and put a patch on it.",
     (5, 5, 1)),
    ("c12", "q04",
     "Buy a new tube; patches never hold.",
     (4, 1, 0)),
    ("c13", "q05",
     "Every two to six months; it dries out over time.",
     (5, 5, 2)),
    ("c14", "q05",
     "Once every two years is plenty.",
     (5, 1, 0)),
    ("c15", "q05",
     "Top it up every few months, roughly every two to six, and more often in hot weather.",
     (5, 4, 1)),
    ("c16", "q06",
     "When a chain checker shows 0.5 percent stretch on an 11- or 12-speed drivetrain, or 0.75 "
     "percent on an older one.",
     (5, 5, 2)),
    ("c17", "q06",
     "When it has stretched by about 0.5 percent. By the way, the workshop is open on Tuesday and"
     " Thursday evenings, and membership costs 30 euros a year with one free service.",
     (3, 4, 1)),
    ("c18", "q06",
     "When it has stretched by 0.75 percent.",
     (5, 3, 1)),
    ("c19", "q07",
     "Degrease and dry the chain, put one drop of lube on each roller, then wipe off the excess.",
     (5, 5, 2)),
    ("c20", "q07",
     "Soak the chain in plenty of oil and leave the excess on so that it stays protected.",
     (5, 1, 0)),
    ("c21", "q07",
     "Clean it with degreaser, then apply lube.",
     (5, 5, 1)),
    ("c22", "q08",
     "Most likely the cassette is worn too; replace it.",
     (5, 5, 2)),
    ("c23", "q08",
     "A chain is worn out when it has stretched by 0.5 percent, which you can measure with a "
     "chain checker.",
     (2, 1, 0)),
    ("c24", "q08",
     "Your new chain is probably too long; take out two links. It could also be a worn cassette.",
     (5, 3, 1)),
    ("c25", "q09",
     "They are the limit screws: H stops the chain going past the smallest sprocket and L past "
     "the largest.",
     (5, 5, 2)),
    ("c26", "q09",
     "They adjust the indexing: turn them if the chain hesitates to climb to a larger sprocket.",
     (5, 1, 0)),
    ("c27", "q09",
     "H and L are limit screws that stop the chain falling off the sprockets; indexing is set "
     "with the barrel adjuster instead.",
     (5, 5, 2)),
    ("c28", "q10",
     "Put the wheel in a truing stand and adjust the spokes a quarter turn at a time, watching "
     "the rim against the callipers.",
     (5, 5, 2)),
    ("c29", "q10",
     "I'm sorry, I can't help with that.",
     (1, 1, 0)),
    ("c30", "q10",
     "Wheels are built from a hub, spokes and a rim; most road wheels have 24 to 32 spokes.",
     (2, 1, 0)),
    ("c31", "q11",
     "Tuesday and Thursday evenings from six to nine, plus Saturday mornings.",
     (5, 5, 2)),
    ("c32", "q11",
     "On Tuesday and Thursday evenings.",
     (5, 5, 1)),
    ("c33", "q11",
     "The workshop is open every day from nine to five.",
     (5, 1, 0)),
    ("c34", "q12",
     "30 euros a year; that covers all the tools and one free service.",
     (5, 5, 2)),
    ("c35", "q12",
     "Membership costs 50 euros a month and includes unlimited free services.",
     (5, 1, 0)),
    ("c36", "q12",
     "It costs 30 euros a year.",
     (5, 5, 1)),
)


def criteria_sample_rows() -> list[dict[str, object]]:
    """The criteria sample's 36 rows: ``id``, ``query_id``, ``topic``, ``question``,
    ``reference``, ``response`` and the hand scores under ``human`` (``{criterion: score}``)."""
    rows: list[dict[str, object]] = []
    for rid, qid, response, (relevance, correctness, completeness) in _ANSWERS:
        topic, question, reference = _QUESTIONS[qid]
        rows.append({"id": rid, "query_id": qid, "topic": topic, "question": question,
                     "reference": reference, "response": response,
                     "human": {"relevance": relevance, "correctness": correctness,
                               "completeness": completeness}})
    return rows
