#!/usr/bin/env python3
"""Writes the health-record fixture: fixtures/realworld/health/*.csv and fixtures/realworld/health.sql.

A small synthetic electronic health record in the layout of Synthea's CSV export: patients,
their encounters, and the conditions, medications, procedures, care plans and claims recorded
at those encounters. It is the shape a hospital or a research network hands over, and it
differs from the other real-shaped fixtures in ways an anonymizer must cope with:

- codes beside descriptions: every SNOMED or RxNorm code column has a text column next to it
  that says the same thing (one description per code), and a reason code of an encounter is a
  condition code of the same patient;
- UUID keys: patients, encounters, care plans and claims are keyed by random UUID text, and
  conditions, medications and procedures have no key of their own;
- a key under another name: claims name the patient in "PATIENTID" and the encounter in
  "APPOINTMENTID", where every other table says "PATIENT" and "ENCOUNTER";
- a CSV export without declared keys: the directory health/ holds one plain CSV file per
  table, with a header line and empty cells for missing values, and nothing that says which
  column is a key or what it references. health.sql holds the same rows as a SQLite script
  that declares the primary keys, the references from "PATIENT" and "ENCOUNTER" and the
  claims' reference to their encounter, but not the claims' "PATIENTID" (a patient's key
  published in a column of a family table under a name no key inference reads), with NULL
  for the empty cells.

The data is consistent: every child row names an encounter of its own patient, a condition
starts on the day of the encounter that recorded it, and no event follows a patient's death.
Everything comes from one seeded generator, so running this script from the repository root
rewrites both forms byte for byte.
"""

import csv
import datetime as dt
import io
import os
import uuid
import random

rng = random.Random(34)

HERE = os.path.join("fixtures", "realworld")
CSV_DIR = os.path.join(HERE, "health")
SQL_PATH = os.path.join(HERE, "health.sql")

N_PATIENTS = 120
EPOCH = dt.datetime(2010, 1, 1)
END = dt.datetime(2022, 12, 15)

# ---------------------------------------------------------------------------------------------
# Vocabularies. Each code has exactly one description.

STATE = "Massachusetts"
# city: (county, ZIP, weight)
CITIES = [
    ("Boston", "Suffolk", "02118", 30),
    ("Worcester", "Worcester", "01604", 12),
    ("Springfield", "Hampden", "01109", 10),
    ("Cambridge", "Middlesex", "02139", 9),
    ("Lowell", "Middlesex", "01852", 8),
    ("Quincy", "Norfolk", "02169", 7),
    ("Newton", "Middlesex", "02458", 5),
    ("Somerville", "Middlesex", "02143", 5),
    ("Framingham", "Middlesex", "01701", 4),
    ("Revere", "Suffolk", "02151", 4),
    ("Chicopee", "Hampden", "01020", 3),
    ("Brookline", "Norfolk", "02445", 3),
]

BIRTH_TOWNS = [
    "Boston", "Worcester", "Springfield", "Cambridge", "Lowell", "Brockton", "Quincy", "Lynn",
    "New Bedford", "Fall River", "Newton", "Lawrence", "Somerville", "Framingham", "Haverhill",
    "Waltham", "Malden", "Brookline", "Plymouth", "Medford", "Taunton", "Chicopee", "Weymouth",
    "Revere", "Peabody", "Methuen", "Barnstable", "Pittsfield", "Attleboro", "Arlington",
    "Everett", "Salem", "Westfield", "Leominster", "Fitchburg", "Beverly", "Holyoke",
    "Marlborough", "Woburn", "Chelsea", "Braintree", "Natick", "Dedham", "Milton", "Andover",
    "Gloucester", "Northampton", "Amherst",
]
FOREIGN_BIRTHPLACES = [
    "Santo Domingo  National District  DO",
    "San Juan  Puerto Rico  PR",
    "Lisbon  Lisbon  PT",
    "Kingston  Surrey  JM",
    "Shanghai  Shanghai  CN",
    "Port-au-Prince  Ouest  HT",
]

FEMALE_NAMES = [
    "Maria", "Jennifer", "Linda", "Patricia", "Elizabeth", "Susan", "Jessica", "Sarah", "Karen",
    "Nancy", "Lisa", "Margaret", "Sandra", "Ashley", "Emily", "Donna", "Michelle", "Carol",
    "Amanda", "Melissa", "Deborah", "Stephanie", "Rebecca", "Laura", "Sharon", "Cynthia",
    "Kathleen", "Amy", "Angela", "Shirley", "Anna", "Brenda", "Pamela", "Emma", "Nicole",
    "Helen", "Samantha", "Katherine", "Christine", "Rachel", "Carolyn", "Janet", "Virginia",
    "Sofia", "Olivia", "Isabella", "Mia", "Ava", "Chloe", "Grace", "Lucia", "Mei", "Ana",
]
MALE_NAMES = [
    "James", "Robert", "John", "Michael", "David", "William", "Richard", "Joseph", "Thomas",
    "Charles", "Christopher", "Daniel", "Matthew", "Anthony", "Mark", "Donald", "Steven",
    "Paul", "Andrew", "Joshua", "Kenneth", "Kevin", "Brian", "George", "Timothy", "Ronald",
    "Edward", "Jason", "Jeffrey", "Ryan", "Jacob", "Gary", "Nicholas", "Eric", "Jonathan",
    "Stephen", "Larry", "Justin", "Scott", "Brandon", "Benjamin", "Samuel", "Gregory",
    "Frank", "Alexander", "Raymond", "Patrick", "Jose", "Luis", "Carlos", "Wei", "Liam", "Noah",
]
SURNAMES = [
    "Crist", "Walker", "Schmidt", "Kuhlman", "Rodriguez", "Hermiston", "Bergstrom", "Gleason",
    "Kessler", "Rutherford", "Okuneva", "Hamill", "Dickinson", "Lebsack", "Mertz", "Runolfsson",
    "Ziemann", "Bogan", "Wisoky", "Hodkiewicz", "Sanford", "Barton", "Kozey", "Schamberger",
    "Corkery", "Gutmann", "Hagenes", "Jacobson", "Kunde", "Lind", "Marquardt", "Nader",
    "Pfeffer", "Quigley", "Reichert", "Stehr", "Torphy", "Upton", "Veum", "Wintheiser",
    "Yundt", "Zulauf", "Abshire", "Bashirian", "Cummerata", "Daugherty", "Emmerich", "Feest",
    "Goyette", "Heller", "Ernser", "Johnston", "Koepp", "Lowe", "McDermott", "Nolan",
    "O'Keefe", "Prosacco", "Rau", "Stark", "Tromp", "Von", "Weimann", "Gonzalez", "Garcia",
    "Martinez", "Nguyen", "Chen", "Silva", "Pereira",
]
STREETS = [
    "Walker", "Schmidt", "Kuhlman", "Hilll", "Lesch", "Considine", "Heathcote", "Fisher",
    "Bayer", "Stokes", "Gerlach", "Mayert", "Wunsch", "Lakin", "Renner", "Boyer", "Little",
    "Harvey", "Ward", "Keebler", "Murazik", "Rempel", "Cassin", "Oberbrunner",
]
STREET_SUFFIXES = [
    "Street", "Avenue", "Road", "Way", "Lane", "Ville", "Mill", "Gate", "Light", "Rapid",
    "Gardens", "Ferry", "Crossroad", "Course", "Junction", "Trafficway",
]

RACES = [("white", 72), ("black", 10), ("asian", 8), ("native", 2), ("other", 8)]

# Encounter types: (CODE, DESCRIPTION).
ENC_TYPES = {
    "general_exam": ("162673000", "General examination of patient (procedure)"),
    "well_child": ("410620009", "Well child visit (procedure)"),
    "symptom": ("185345009", "Encounter for symptom"),
    "problem": ("185347001", "Encounter for problem (procedure)"),
    "follow_up_enc": ("390906007", "Follow-up encounter (procedure)"),
    "prenatal_initial": ("424441002", "Prenatal initial visit (regime/therapy)"),
    "prenatal": ("424619006", "Prenatal visit (regime/therapy)"),
    "follow_up_visit": ("185389009", "Follow-up visit (procedure)"),
    "outpatient_proc": ("371883000", "Outpatient procedure (procedure)"),
    "emergency": ("50849002", "Emergency room admission (procedure)"),
    "admission": ("32485007", "Hospital admission (procedure)"),
    "urgent": ("702927004", "Urgent care clinic (environment)"),
}
ENC_BASE_COST = {
    "wellness": 136.80, "ambulatory": 129.16, "outpatient": 187.45, "emergency": 1120.20,
    "inpatient": 2893.52, "urgentcare": 142.58,
}

# Conditions: key -> (CODE, DESCRIPTION).
CONDITIONS = {
    "hypertension": ("38341003", "Hypertension"),
    "diabetes": ("44054006", "Diabetes"),
    "prediabetes": ("15777000", "Prediabetes"),
    "hyperlipidemia": ("55822004", "Hyperlipidemia"),
    "asthma": ("195967001", "Asthma"),
    "obesity": ("162864005", "Body mass index 30+ - obesity (finding)"),
    "chd": ("53741008", "Coronary Heart Disease"),
    "afib": ("49436004", "Atrial Fibrillation"),
    "copd": ("185086009", "Chronic obstructive bronchitis (disorder)"),
    "oa_knee": ("239873007", "Osteoarthritis of knee"),
    "alzheimers": ("26929004", "Alzheimer's disease (disorder)"),
    "anemia": ("271737000", "Anemia (disorder)"),
    "chronic_sinusitis": ("40055000", "Chronic sinusitis (disorder)"),
    "pharyngitis": ("195662009", "Acute viral pharyngitis (disorder)"),
    "bronchitis": ("10509002", "Acute bronchitis (disorder)"),
    "viral_sinusitis": ("444814009", "Viral sinusitis (disorder)"),
    "otitis": ("65363002", "Otitis media"),
    "strep": ("43878008", "Streptococcal sore throat (disorder)"),
    "pneumonia": ("233604007", "Pneumonia"),
    "ankle_sprain": ("44465007", "Sprain of ankle"),
    "wrist_sprain": ("70704007", "Sprain of wrist"),
    "laceration": ("283371005", "Laceration of forearm"),
    "concussion": ("62106007", "Concussion with no loss of consciousness"),
    "pregnancy": ("72892002", "Normal pregnancy"),
    "miscarriage": ("19169002", "Miscarriage in first trimester"),
    "polyp": ("68496003", "Polyp of colon"),
}

# Chronic conditions: key -> function of age in years at the end of the record -> probability.
CHRONIC = [
    ("hypertension", lambda a: 0.0 if a < 18 else 0.08 if a < 35 else 0.25 if a < 55 else 0.45),
    ("prediabetes", lambda a: 0.0 if a < 18 else 0.15),
    ("diabetes", lambda a: 0.0 if a < 30 else 0.08 if a < 50 else 0.15),
    ("hyperlipidemia", lambda a: 0.0 if a < 40 else 0.22),
    ("asthma", lambda a: 0.09),
    ("obesity", lambda a: 0.0 if a < 18 else 0.18),
    ("chd", lambda a: 0.0 if a < 55 else 0.09),
    ("afib", lambda a: 0.0 if a < 60 else 0.07),
    ("copd", lambda a: 0.0 if a < 50 else 0.05),
    ("oa_knee", lambda a: 0.0 if a < 55 else 0.12),
    ("alzheimers", lambda a: 0.0 if a < 72 else 0.08),
    ("anemia", lambda a: 0.05),
    ("chronic_sinusitis", lambda a: 0.0 if a < 18 else 0.04),
]
RESPIRATORY = ["pharyngitis", "bronchitis", "viral_sinusitis", "otitis", "strep"]
RESPIRATORY_WEIGHTS = [30, 20, 30, 12, 8]
INJURIES = ["ankle_sprain", "wrist_sprain", "laceration", "concussion"]
INJURY_WEIGHTS = [35, 20, 30, 15]
ACUTE_DAYS = {
    "pharyngitis": (7, 14), "bronchitis": (10, 21), "viral_sinusitis": (7, 21),
    "otitis": (7, 14), "strep": (7, 10), "pneumonia": (14, 35), "ankle_sprain": (21, 42),
    "wrist_sprain": (21, 42), "laceration": (10, 28), "concussion": (14, 42),
    "miscarriage": (1, 3),
}
# Conditions a patient is seen for again (a follow-up names them as its reason).
FOLLOWED = ["hypertension", "diabetes", "prediabetes", "hyperlipidemia", "asthma", "chd",
            "afib", "copd", "oa_knee", "alzheimers", "chronic_sinusitis"]

# Medications: key -> (CODE, DESCRIPTION, cost per dispense).
MEDS = {
    "lisinopril": ("314076", "lisinopril 10 MG Oral Tablet", 11.42),
    "amlodipine": ("197361", "amlodipine 5 MG Oral Tablet", 9.87),
    "hctz": ("310798", "Hydrochlorothiazide 25 MG Oral Tablet", 6.31),
    "metformin": ("860975", "24 HR Metformin hydrochloride 500 MG Extended Release Oral Tablet", 18.04),
    "humulin": ("106892", "insulin human, isophane 70 UNT/ML / Regular Insulin, Human 30 UNT/ML Injectable Suspension [Humulin]", 186.73),
    "simvastatin": ("314231", "Simvastatin 10 MG Oral Tablet", 7.96),
    "fluticasone": ("895994", "120 ACTUAT Fluticasone propionate 0.044 MG/ACTUAT Metered Dose Inhaler", 48.27),
    "aspirin": ("243670", "aspirin 81 MG Oral Tablet", 3.14),
    "warfarin": ("855332", "Warfarin Sodium 5 MG Oral Tablet", 12.85),
    "donepezil": ("997224", "donepezil hydrochloride 10 MG Oral Tablet", 24.66),
    "amoxicillin": ("308182", "Amoxicillin 250 MG Oral Capsule", 9.11),
    "penicillin": ("834061", "Penicillin V Potassium 250 MG Oral Tablet", 11.59),
    "amox_clav": ("562251", "Amoxicillin 250 MG / Clavulanate 125 MG Oral Tablet", 14.72),
    "acetaminophen": ("313782", "Acetaminophen 325 MG Oral Tablet", 4.28),
    "naproxen": ("849574", "Naproxen sodium 220 MG Oral Tablet", 5.47),
    "ibuprofen": ("310965", "Ibuprofen 200 MG Oral Tablet", 4.93),
    "oxycodone": ("1049221", "Acetaminophen 325 MG / Oxycodone Hydrochloride 5 MG Oral Tablet", 16.38),
    "yaz": ("748856", "Yaz 28 Day Pack", 41.19),
    "medroxyprogesterone": ("1000126", "1 ML medroxyprogesterone acetate 150 MG/ML Injection", 37.40),
}
CHRONIC_MEDS = {
    "hypertension": ["lisinopril", "amlodipine", "hctz"],
    "diabetes": ["metformin"],
    "hyperlipidemia": ["simvastatin"],
    "asthma": ["fluticasone"],
    "chd": ["aspirin"],
    "afib": ["warfarin"],
    "alzheimers": ["donepezil"],
}
ACUTE_MEDS = {
    "pharyngitis": ["acetaminophen", "ibuprofen"],
    "bronchitis": ["acetaminophen"],
    "viral_sinusitis": ["amox_clav", "acetaminophen"],
    "otitis": ["amoxicillin", "ibuprofen"],
    "strep": ["penicillin", "amoxicillin"],
    "pneumonia": ["amoxicillin", "amox_clav"],
    "ankle_sprain": ["naproxen", "ibuprofen"],
    "wrist_sprain": ["naproxen", "ibuprofen"],
    "laceration": ["acetaminophen"],
    "concussion": ["acetaminophen"],
    "chronic_sinusitis": ["amox_clav"],
}

# Procedures: key -> (CODE, DESCRIPTION, base cost).
PROCS = {
    "med_rec": ("430193006", "Medication Reconciliation (procedure)", 516.65),
    "assessment": ("710824005", "Assessment of health and social care needs (procedure)", 431.40),
    "depression": ("171207006", "Depression screening (procedure)", 431.40),
    "doc_meds": ("428191000124101", "Documentation of current medications (procedure)", 431.40),
    "throat_culture": ("117015009", "Throat culture (procedure)", 2073.93),
    "resp_function": ("23426006", "Measurement of respiratory function (procedure)", 516.65),
    "chest_xray": ("399208008", "Plain chest X-ray (procedure)", 431.40),
    "colonoscopy": ("73761001", "Colonoscopy", 8749.63),
    "fundal_height": ("274804006", "Evaluation of uterine fundal height", 431.40),
    "fetal_heart": ("225158009", "Auscultation of the fetal heart", 516.65),
    "pregnancy_test": ("252160004", "Standard pregnancy test", 431.40),
    "fetal_ultrasound": ("169230002", "Ultrasound scan for fetal viability", 1276.92),
    "suture": ("288086009", "Suture open wound", 1139.90),
    "injection": ("76601001", "Intramuscular injection", 431.40),
    "physical_exam": ("5880005", "Physical examination procedure (procedure)", 516.65),
}

# Care plans: key -> (CODE, DESCRIPTION), and the conditions each is made for.
CAREPLANS = {
    "diabetes_plan": ("698360004", "Diabetes self management plan"),
    "hypertension_plan": ("443402002", "Lifestyle education regarding hypertension (procedure)"),
    "asthma_plan": ("699728000", "Asthma self management"),
    "copd_plan": ("412776001", "Chronic obstructive pulmonary disease clinical management plan"),
    "antenatal": ("134435003", "Routine antenatal care"),
    "physio": ("91251008", "Physical therapy procedure"),
    "respiratory": ("53950000", "Respiratory therapy"),
    "wound": ("225358003", "Wound care"),
    "infection": ("736376001", "Infectious disease care plan (record artifact)"),
}
PLAN_FOR = {
    "diabetes": ("diabetes_plan", 0.9), "prediabetes": ("diabetes_plan", 0.7),
    "hypertension": ("hypertension_plan", 0.7), "asthma": ("asthma_plan", 0.9),
    "copd": ("copd_plan", 0.9), "pregnancy": ("antenatal", 1.0),
    "ankle_sprain": ("physio", 0.6), "wrist_sprain": ("physio", 0.6),
    "oa_knee": ("physio", 0.5), "laceration": ("wound", 0.8), "concussion": ("physio", 0.3),
    "pneumonia": ("respiratory", 0.8), "bronchitis": ("respiratory", 0.3),
    "strep": ("infection", 0.3),
}

# ---------------------------------------------------------------------------------------------
# Helpers.


def new_id():
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def pick(pairs):
    values = [v for v, _ in pairs]
    weights = [w for _, w in pairs]
    return rng.choices(values, weights)[0]


def day(d):
    return d.strftime("%Y-%m-%d")


def stamp(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def money(x):
    return "%.2f" % x


def age_at(birth, t):
    years = t.year - birth.year
    if (t.month, t.day) < (birth.month, birth.day):
        years -= 1
    return years


def random_date(lo, hi):
    return lo + dt.timedelta(days=rng.randrange((hi - lo).days + 1))


def random_time(lo, hi):
    return lo + dt.timedelta(seconds=rng.randrange(int((hi - lo).total_seconds())))


# ---------------------------------------------------------------------------------------------
# Patients, generated by household: members share a surname, an address and a city.

patients = []        # rows
people = []          # per patient: dict of facts the events need
used_last = []
used_ssn = []


def unique(make, used):
    while True:
        v = make()
        if v not in used:
            used.append(v)
            return v


def birthplace():
    if rng.random() < 0.08:
        return rng.choice(FOREIGN_BIRTHPLACES)
    return "%s  %s  US" % (rng.choice(BIRTH_TOWNS), STATE)


def address():
    a = "%d %s %s" % (rng.randint(100, 1099), rng.choice(STREETS), rng.choice(STREET_SUFFIXES))
    r = rng.random()
    if r < 0.25:
        a += " Unit %d" % rng.randint(1, 99)
    elif r < 0.35:
        a += " Apt %d" % rng.randint(1, 40)
    elif r < 0.40:
        a += " Suite %d" % rng.randint(1, 20)
    return a


while len(patients) < N_PATIENTS:
    size = pick([(1, 80), (2, 12), (3, 5), (4, 3)])
    size = min(size, N_PATIENTS - len(patients))
    last = unique(lambda: "%s%d" % (rng.choice(SURNAMES), rng.randint(100, 999)), used_last)
    city, county, zip_code, _ = pick([(c, c[3]) for c in CITIES])
    zip_cell = "" if rng.random() < 0.12 else zip_code
    home = address()
    race = pick(RACES)
    ethnicity = "hispanic" if rng.random() < (0.35 if race == "other" else 0.08) else "nonhispanic"
    head_year = rng.randint(1930, 2015) if size == 1 else rng.randint(1940, 1990)
    head_gender = rng.choice("MF")
    for m in range(size):
        if m == 0:
            year, gender = head_year, head_gender
        elif m == 1:
            year = head_year + rng.randint(-6, 6)
            gender = "F" if head_gender == "M" else "M"
        else:
            year = rng.randint(head_year + 22, min(head_year + 40, 2015))
            gender = rng.choice("MF")
        birth = dt.date(year, 1, 1) + dt.timedelta(days=rng.randrange(365))
        age_now = age_at(birth, END.date())
        if age_now < 18:
            marital = ""
        elif size >= 2 and m < 2:
            marital = "M"
        else:
            marital = "M" if rng.random() < 0.45 else "S"
        death = None
        p_death = 0.25 if year < 1945 else 0.06 if year < 1965 else 0.01
        if rng.random() < p_death:
            death = random_date(max(dt.date(2012, 1, 1), birth + dt.timedelta(days=400)), END.date())
        first = "%s%d" % (rng.choice(FEMALE_NAMES if gender == "F" else MALE_NAMES),
                          rng.randint(100, 999))
        ssn = unique(lambda: "999-%02d-%04d" % (rng.randint(10, 99), rng.randint(1000, 9999)),
                     used_ssn)
        pid = new_id()
        end_of_record = death if death else END.date()
        expenses = money(max(1, age_at(birth, end_of_record)) * rng.uniform(1800.0, 16000.0))
        patients.append([
            pid, day(birth), day(death) if death else "", ssn, first, last, marital, race,
            ethnicity, gender, birthplace(), home, city, STATE, county, zip_cell, expenses,
        ])
        people.append({"id": pid, "birth": birth, "death": death, "gender": gender})

# ---------------------------------------------------------------------------------------------
# Encounters and what they record, patient by patient in time order.

encounters, conditions, medications, procedures, careplans, claims = [], [], [], [], [], []


def encounter_count():
    return min(20, 2 + int(19 * rng.random() ** 2.4))


for person in people:
    birth, death, gender = person["birth"], person["death"], person["gender"]
    pid = person["id"]
    lo = max(EPOCH, dt.datetime(birth.year, birth.month, birth.day) + dt.timedelta(days=30))
    hi = END if death is None else dt.datetime(death.year, death.month, death.day) - dt.timedelta(days=1)
    age_end = age_at(birth, hi.date())

    # The plan: when each visit happens, and which are prenatal.
    n = encounter_count()
    timeline = []  # (time, kind)
    pregnancy = None
    if gender == "F" and rng.random() < 0.35:
        # A pregnancy at an age of 18 to 42 inside the record, if there is room for one.
        a_lo = max(lo, dt.datetime(birth.year + 18, 6, 1))
        a_hi = min(hi - dt.timedelta(days=300), dt.datetime(birth.year + 42, 6, 1))
        if a_lo < a_hi:
            start = random_time(a_lo, a_hi).replace(hour=rng.randint(8, 16))
            visits = rng.randint(1, 3)
            timeline.append((start, "prenatal_initial"))
            for k in range(visits):
                timeline.append((start + dt.timedelta(days=56 * (k + 1) + rng.randint(-5, 5),
                                                      minutes=rng.randint(-90, 90)), "prenatal"))
            pregnancy = {"start": start, "miscarriage": rng.random() < 0.12}
    while len(timeline) < n:
        timeline.append((random_time(lo, hi), "visit"))
    timeline.sort(key=lambda e: e[0])

    # Chronic conditions this patient will have, each with the visit that first records it.
    chronic_plan = {}
    visit_indexes = [i for i, (_, k) in enumerate(timeline) if k == "visit"]
    for key, p in CHRONIC:
        if visit_indexes and rng.random() < p(age_end):
            chronic_plan.setdefault(rng.choice(visit_indexes), []).append(key)
    active = []  # chronic condition keys recorded so far
    chronic_meds = []  # medication keys started so far
    contraception = False

    for i, (start, kind) in enumerate(timeline):
        eid = new_id()
        age = age_at(birth, start.date())
        onset = chronic_plan.get(i, [])
        new_conditions = []  # (key, stop date or None)
        reason = None
        if kind == "prenatal_initial":
            cls, enc_type, reason = "ambulatory", "prenatal_initial", "pregnancy"
            ptime = pregnancy["start"]
            pstop = ptime + dt.timedelta(days=rng.randint(266, 282))
            if pregnancy["miscarriage"]:
                # Lost before the next prenatal visit, which becomes an emergency.
                pstop = min(t for t, k in timeline if k == "prenatal")
            new_conditions.append(("pregnancy", pstop.date()))
            pregnancy["stop"] = pstop
        elif kind == "prenatal":
            if start < pregnancy["stop"]:
                cls, enc_type, reason = "ambulatory", "prenatal", "pregnancy"
            elif pregnancy["miscarriage"] and not pregnancy.get("lost"):
                cls, enc_type, reason = "emergency", "emergency", "miscarriage"
                new_conditions.append(("miscarriage", None))
                pregnancy["lost"] = True
            else:
                cls, enc_type = "wellness", ("well_child" if age < 18 else "general_exam")
        else:
            cls = pick([("wellness", 36), ("ambulatory", 33), ("outpatient", 12),
                        ("emergency", 8), ("urgentcare", 7), ("inpatient", 4)])
            if cls == "wellness":
                enc_type = "well_child" if age < 18 else "general_exam"
            elif cls == "ambulatory":
                r = rng.random()
                if onset:
                    enc_type, reason = "symptom", onset[0]
                elif r < 0.5:
                    enc_type = "symptom"
                    reason = pick(list(zip(RESPIRATORY, RESPIRATORY_WEIGHTS)))
                    if reason == "otitis" and age > 16 and rng.random() < 0.7:
                        reason = "viral_sinusitis"
                    new_conditions.append((reason, None))
                elif r < 0.8 and any(k in FOLLOWED for k in active):
                    enc_type = "follow_up_enc"
                    reason = rng.choice([k for k in active if k in FOLLOWED])
                else:
                    enc_type = "problem"
            elif cls == "outpatient":
                if onset:
                    enc_type, reason = "follow_up_visit", onset[0]
                elif any(k in FOLLOWED for k in active) and rng.random() < 0.6:
                    enc_type = "follow_up_visit"
                    reason = rng.choice([k for k in active if k in FOLLOWED])
                else:
                    enc_type = "outpatient_proc"
            elif cls == "emergency":
                enc_type = "emergency"
                r = rng.random()
                if r < 0.6:
                    reason = pick(list(zip(INJURIES, INJURY_WEIGHTS)))
                    new_conditions.append((reason, None))
                elif r < 0.7:
                    reason = "pneumonia"
                    new_conditions.append((reason, None))
                else:
                    acute = [k for k in active if k in ("asthma", "chd", "afib", "copd")]
                    if acute:
                        reason = rng.choice(acute)
            elif cls == "urgentcare":
                enc_type = "urgent"
                r = rng.random()
                if r < 0.45:
                    reason = pick(list(zip(RESPIRATORY, RESPIRATORY_WEIGHTS)))
                    new_conditions.append((reason, None))
                elif r < 0.75:
                    reason = pick(list(zip(INJURIES, INJURY_WEIGHTS)))
                    new_conditions.append((reason, None))
            else:  # inpatient
                enc_type = "admission"
                serious = [k for k in active if k in ("chd", "afib", "copd", "diabetes")]
                if serious and rng.random() < 0.6:
                    reason = rng.choice(serious)
                else:
                    reason = "pneumonia"
                    new_conditions.append((reason, None))
        for key in onset:
            if key not in [k for k, _ in new_conditions]:
                new_conditions.append((key, None))
            if key not in active:
                active.append(key)
        if reason not in (None, "pregnancy") and reason not in active \
                and reason not in [k for k, _ in new_conditions]:
            new_conditions.append((reason, None))

        minutes = {
            "wellness": [15, 30], "ambulatory": [15, 30, 45], "outpatient": [30, 45, 60],
            "emergency": [60, 75, 90, 120], "urgentcare": [30, 45, 60],
            "inpatient": [90, 105, 120],
        }[cls]
        stop = start + dt.timedelta(minutes=rng.choice(minutes))
        cost = ENC_BASE_COST[cls] * rng.uniform(0.85, 1.6)
        code, desc = ENC_TYPES[enc_type]
        rcode, rdesc = CONDITIONS[reason] if reason else ("", "")
        encounters.append([eid, stamp(start), stamp(stop), pid, cls, code, desc, money(cost),
                           rcode, rdesc])

        # Conditions recorded at this visit start on its day.
        for key, cstop in new_conditions:
            if cstop is None and key in ACUTE_DAYS:
                lo_d, hi_d = ACUTE_DAYS[key]
                cstop = start.date() + dt.timedelta(days=rng.randint(lo_d, hi_d))
            if cstop is None and key in ("obesity", "anemia") and rng.random() < 0.3:
                cstop = start.date() + dt.timedelta(days=rng.randint(200, 900))
            if cstop is not None and cstop > hi.date():
                cstop = None
            ccode, cdesc = CONDITIONS[key]
            conditions.append([day(start), day(cstop) if cstop else "", pid, eid, ccode, cdesc])

        # Medications.
        def prescribe(med, why, t, ongoing):
            mcode, mdesc, unit = MEDS[med]
            if ongoing:
                months = max(1, (hi.year - t.year) * 12 + hi.month - t.month)
                mstop = stamp(dt.datetime(death.year, death.month, death.day, t.hour, t.minute,
                                          t.second)) if death else ""
                dispenses = months
            else:
                dispenses = rng.randint(1, 2)
                mstop = stamp(t + dt.timedelta(days=rng.randint(7, 30)))
            total = unit * dispenses * rng.uniform(0.9, 1.1)
            wcode, wdesc = CONDITIONS[why] if why else ("", "")
            medications.append([stamp(t), mstop, pid, eid, mcode, mdesc, money(total),
                                str(dispenses), wcode, wdesc])

        for key in onset:
            if key in CHRONIC_MEDS and rng.random() < 0.85:
                med = rng.choice(CHRONIC_MEDS[key])
                if med not in chronic_meds:
                    chronic_meds.append(med)
                    prescribe(med, key, start, True)
        for key, _ in new_conditions:
            if key in ACUTE_MEDS and key not in CHRONIC_MEDS and rng.random() < 0.6:
                med = rng.choice(ACUTE_MEDS[key])
                # A pain killer is often dispensed without a reason on record.
                analgesic = med in ("acetaminophen", "ibuprofen", "naproxen")
                prescribe(med, None if analgesic and rng.random() < 0.5 else key, start, False)
        if reason == "diabetes" and "diabetes" not in onset \
                and "humulin" not in chronic_meds and rng.random() < 0.6:
            # Insulin added at a later visit for the diabetes.
            chronic_meds.append("humulin")
            prescribe("humulin", "diabetes", start, True)
        if cls == "wellness" and gender == "F" and 15 <= age <= 45 and not contraception \
                and pregnancy is None and rng.random() < 0.35:
            contraception = True
            prescribe(rng.choice(["yaz", "yaz", "medroxyprogesterone"]), None, start, True)
        if enc_type == "problem" and rng.random() < 0.6:
            prescribe(rng.choice(["acetaminophen", "ibuprofen", "naproxen"]), None, start, False)

        # Procedures, performed during the visit.
        done = []
        if cls == "wellness":
            if chronic_meds and rng.random() < 0.5:
                done.append("med_rec")
            if age >= 18 and rng.random() < 0.15:
                done.append("assessment")
            if age >= 12 and rng.random() < 0.12:
                done.append("depression")
            if rng.random() < 0.05:
                done.append("physical_exam")
            if contraception and rng.random() < 0.15:
                done.append("injection")
        elif enc_type == "prenatal_initial":
            done += ["pregnancy_test", "fetal_ultrasound"]
        elif enc_type == "prenatal":
            done += ["fundal_height", "fetal_heart"]
        elif enc_type == "outpatient_proc":
            if age >= 45 and rng.random() < 0.6:
                done.append("colonoscopy")
            elif rng.random() < 0.5:
                done.append("physical_exam")
        else:
            if reason in ("pharyngitis", "strep") and rng.random() < 0.6:
                done.append("throat_culture")
            if reason in ("asthma", "copd", "bronchitis") and rng.random() < 0.6:
                done.append("resp_function")
            if reason == "pneumonia":
                done.append("chest_xray")
            if reason == "laceration":
                done.append("suture")
            if enc_type in ("follow_up_enc", "follow_up_visit") and rng.random() < 0.3:
                done.append("doc_meds")
        span = int((stop - start).total_seconds())
        for proc in done:
            pcode, pdesc, base = PROCS[proc]
            when = start + dt.timedelta(seconds=rng.randrange(0, span, 60))
            procedures.append([stamp(when), pid, eid, pcode, pdesc,
                               money(base * rng.uniform(0.9, 1.1))])
        if "colonoscopy" in done and rng.random() < 0.3:
            ccode, cdesc = CONDITIONS["polyp"]
            conditions.append([day(start), "", pid, eid, ccode, cdesc])

        # Care plans for what was diagnosed here.
        for key, _ in new_conditions:
            if key not in PLAN_FOR:
                continue
            plan, p = PLAN_FOR[key]
            if rng.random() >= p:
                continue
            ccode, cdesc = CAREPLANS[plan]
            if key in ACUTE_DAYS:
                pstop = start.date() + dt.timedelta(days=rng.randint(14, 60))
            elif key == "pregnancy":
                pstop = pregnancy["stop"].date()
            else:
                pstop = None if rng.random() < 0.7 else start.date() + dt.timedelta(days=rng.randint(180, 1500))
            if pstop is not None and pstop > hi.date():
                pstop = None
            wcode, wdesc = CONDITIONS[key]
            careplans.append([new_id(), day(start), day(pstop) if pstop else "", pid, eid,
                              ccode, cdesc, wcode, wdesc])

        # The claim for the visit (a few visits have none in the export).
        if rng.random() < 0.85:
            diag = rcode or (CONDITIONS[new_conditions[0][0]][0] if new_conditions else "")
            billed = start >= dt.datetime(2022, 6, 1) or rng.random() < 0.06
            outstanding = cost * rng.uniform(0.1, 1.0) if billed else 0.0
            claims.append([new_id(), pid, eid, stamp(start), diag,
                           "BILLED" if billed else "CLOSED", money(outstanding)])

# The export quotes at least one cell: a medication's description holds commas.
assert any("," in row[5] for row in medications)

# ---------------------------------------------------------------------------------------------
# Output.

T, R, I = "TEXT", "REAL", "INTEGER"
PK = "TEXT NOT NULL PRIMARY KEY"
TO_PATIENT = 'TEXT NOT NULL REFERENCES patients ("Id")'
TO_ENCOUNTER = 'TEXT NOT NULL REFERENCES encounters ("Id")'

TABLES = [
    ("patients", patients, [
        ("Id", PK), ("BIRTHDATE", T), ("DEATHDATE", T), ("SSN", T), ("FIRST", T), ("LAST", T),
        ("MARITAL", T), ("RACE", T), ("ETHNICITY", T), ("GENDER", T), ("BIRTHPLACE", T),
        ("ADDRESS", T), ("CITY", T), ("STATE", T), ("COUNTY", T), ("ZIP", T),
        ("HEALTHCARE_EXPENSES", R)]),
    ("encounters", encounters, [
        ("Id", PK), ("START", T), ("STOP", T), ("PATIENT", TO_PATIENT), ("ENCOUNTERCLASS", T),
        ("CODE", T), ("DESCRIPTION", T), ("TOTAL_CLAIM_COST", R), ("REASONCODE", T),
        ("REASONDESCRIPTION", T)]),
    ("conditions", conditions, [
        ("START", T), ("STOP", T), ("PATIENT", TO_PATIENT), ("ENCOUNTER", TO_ENCOUNTER),
        ("CODE", T), ("DESCRIPTION", T)]),
    ("medications", medications, [
        ("START", T), ("STOP", T), ("PATIENT", TO_PATIENT), ("ENCOUNTER", TO_ENCOUNTER),
        ("CODE", T), ("DESCRIPTION", T), ("TOTALCOST", R), ("DISPENSES", I),
        ("REASONCODE", T), ("REASONDESCRIPTION", T)]),
    ("procedures", procedures, [
        ("DATE", T), ("PATIENT", TO_PATIENT), ("ENCOUNTER", TO_ENCOUNTER), ("CODE", T),
        ("DESCRIPTION", T), ("BASE_COST", R)]),
    ("careplans", careplans, [
        ("Id", PK), ("START", T), ("STOP", T), ("PATIENT", TO_PATIENT),
        ("ENCOUNTER", TO_ENCOUNTER), ("CODE", T), ("DESCRIPTION", T), ("REASONCODE", T),
        ("REASONDESCRIPTION", T)]),
    ("claims", claims, [
        ("Id", PK), ("PATIENTID", "TEXT NOT NULL"), ("APPOINTMENTID", TO_ENCOUNTER),
        ("SERVICEDATE", T), ("DIAGNOSIS1", T), ("STATUS1", T), ("OUTSTANDING1", R)]),
]

HEADER = """\
-- A Synthea-shaped health record: patients, their encounters, and the conditions,
-- medications, procedures, care plans and claims recorded at those encounters, with the
-- upper-case column names of Synthea's CSV export. Keys are UUID text; conditions,
-- medications and procedures have no key of their own. Every code column (SNOMED, RxNorm,
-- digits kept as TEXT) has its description beside it, one description per code, and an
-- encounter's reason is a condition code of the same patient. Every "PATIENT" and
-- "ENCOUNTER" column is a declared reference, and so is the claims' "APPOINTMENTID" (their
-- encounter); the claims' "PATIENTID" holds the patient's key with no declared reference. Empty
-- cells of the export are NULL. The same rows, as plain CSV without keys, are in health/;
-- both are written by scripts/health-fixture.py.
"""


def sql_value(cell, kind):
    if cell == "":
        return "NULL"
    if kind.startswith("TEXT"):
        return "'" + cell.replace("'", "''") + "'"
    return cell


def write_csv(name, rows, columns):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    w.writerow([c for c, _ in columns])
    w.writerows(rows)
    with open(os.path.join(CSV_DIR, name + ".csv"), "w", encoding="utf-8", newline="") as f:
        f.write(buf.getvalue())


def write_sql():
    out = [HEADER]
    for name, rows, columns in TABLES:
        width = max(len(c) for c, _ in columns) + 2
        lines = ['    %s %s' % (('"%s"' % c).ljust(width), kind) for c, kind in columns]
        out.append("\nCREATE TABLE %s (\n%s\n);\n" % (name, ",\n".join(lines)))
    for name, rows, columns in TABLES:
        out.append("\n-- %d %s.\n" % (len(rows), name))
        for at in range(0, len(rows), 100):
            chunk = rows[at:at + 100]
            values = ["    (" + ", ".join(sql_value(cell, kind) for cell, (_, kind)
                                           in zip(row, columns)) + ")" for row in chunk]
            out.append("INSERT INTO %s VALUES\n%s;\n" % (name, ",\n".join(values)))
    with open(SQL_PATH, "w", encoding="utf-8", newline="") as f:
        f.write("".join(out))


os.makedirs(CSV_DIR, exist_ok=True)
for name, rows, columns in TABLES:
    write_csv(name, rows, columns)
write_sql()
for name, rows, _ in TABLES:
    print("%-12s %5d rows" % (name, len(rows)))
