//! The thesis's two synthetic datasets (000 Sec. 2.4, "Datasets"): simulated students of a
//! Computer Science program with their GPA, the courses they took with the letter grades they
//! received, and the textbooks they bought for each course.
//!
//! - syntheticS, `students -> enrollments -> purchases`: 000's Fig. 1.2 schema,
//!   (major, YoB) -> courses -> books.
//! - syntheticT, `students -> years -> enrollments -> purchases`: the same records with the
//!   college year (freshman .. senior) in which the courses were taken as an extra level.
//!
//! The thesis fixes the shape (1000 students, about 20 courses each: every obligatory course,
//! a fixed number of core courses, a varying number of technical-area electives; 0-2 books per
//! course; GPA normal; grades from the GPA and the kind of course; year of birth from the
//! graduation year, the same number graduating each year; a course's year probabilistic from
//! when it is usually taken and whether it is a prerequisite of another course taken). Every
//! number it leaves open is a named constant below whose doc comment gives the choice.
//!
//! Both datasets are drawn from the same stream: a seed gives the same students, courses,
//! grades and books in syntheticS and syntheticT, which differ only by the `years` level.
//! The catalog ([`SYNTHETIC_COURSES`], [`SYNTHETIC_MAJORS`], [`YEAR_LEVELS`]) is the single
//! source of the generated values and of the hierarchy files
//! `fixtures/hierarchies/synthetic_{course,book,major,year}.csv` rendered from it.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, Int64Array, StringArray};
use arrow::datatypes::{DataType, Field};
use arrow::record_batch::RecordBatch;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::university::book;
use super::{batch, text_field, weighted_pick, weighted_sample, Textbook};
use crate::warehouse::{ForeignKey, ReleaseSet, ReleaseTable};
use Requirement::{Core, Elective, Obligatory};

// ---------------------------------------------------------------------------------------------
// Catalog
// ---------------------------------------------------------------------------------------------

/// The number of students in each of 000's synthetic datasets.
pub const SYNTHETIC_STUDENTS: usize = 1000;

/// Which requirement of the program a course fills. The pools are disjoint, so drawing each
/// without replacement never gives a student the same course twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requirement {
    /// Every student takes all of these.
    Obligatory,
    /// Every student takes [`CORE_PER_STUDENT`] of these.
    Core,
    /// Every student takes [`ELECTIVES_MIN`]..=[`ELECTIVES_MAX`] of these.
    Elective,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyntheticCourse {
    /// Area letters, then three digits whose first is the level (2, 3 or 4): `CS301`. The
    /// course hierarchy is derived from it: `CS301;CS3xx;CS;*`.
    pub id: &'static str,
    /// For readers of the catalog; not generated.
    pub title: &'static str,
    pub requirement: Requirement,
    /// Relative popularity within the pool (core and electives; obligatory courses ignore it).
    pub weight: u32,
    /// A course listed earlier in the catalog, at the same or a lower level. A student who
    /// took both takes this one in the same college year or a later one.
    pub prerequisite: Option<&'static str>,
    /// The 2-4 textbooks a student chooses from. Titles are unique over the catalog (a book's
    /// parent in the book hierarchy is its course).
    pub books: &'static [Textbook],
}

/// A major program. 000 says all simulated students are CS majors; a few related majors keep
/// `major` from being a constant QI, with CS still the large majority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Major {
    pub name: &'static str,
    /// The major hierarchy's second level.
    pub faculty: &'static str,
    /// The course area whose electives this major prefers ([`MAJOR_AFFINITY`]).
    pub area: &'static str,
    /// Percent of students.
    pub percent: u32,
}

pub const SYNTHETIC_MAJORS: [Major; 5] = [
    Major {
        name: "Computer Science",
        faculty: "Engineering",
        area: "CS",
        percent: 55,
    },
    Major {
        name: "Computer Engineering",
        faculty: "Engineering",
        area: "EE",
        percent: 15,
    },
    Major {
        name: "Electronics Engineering",
        faculty: "Engineering",
        area: "EE",
        percent: 8,
    },
    Major {
        name: "Mathematics",
        faculty: "Natural Sciences",
        area: "MATH",
        percent: 14,
    },
    Major {
        name: "Physics",
        faculty: "Natural Sciences",
        area: "PHYS",
        percent: 8,
    },
];

/// The college years of syntheticT, in order, with the year hierarchy's second level.
pub const YEAR_LEVELS: [(&str, &str); 4] = [
    ("freshman", "lower"),
    ("sophomore", "lower"),
    ("junior", "upper"),
    ("senior", "upper"),
];

const fn course(
    id: &'static str,
    title: &'static str,
    requirement: Requirement,
    weight: u32,
    prerequisite: Option<&'static str>,
    books: &'static [Textbook],
) -> SyntheticCourse {
    SyntheticCourse {
        id,
        title,
        requirement,
        weight,
        prerequisite,
        books,
    }
}

/// The program, modelled on a CS curriculum like Sabanci University's (000 Sec. 2.4): 8
/// obligatory courses, 10 core courses and 28 technical-area electives in four areas (CS,
/// MATH, EE, PHYS), levels 2xx-4xx. Ids, titles, weights, prerequisites and list prices are
/// ours; prices are 25.00-195.00 so that a used copy (60-85% of list) still costs >= 15.00.
pub const SYNTHETIC_COURSES: [SyntheticCourse; 46] = [
    // Obligatory.
    course(
        "CS201",
        "Introduction to Computing",
        Obligatory,
        1,
        None,
        &[
            book("Deitel C++ How to Program", 13900),
            book("Savitch Absolute C++", 11800),
            book(
                "Stroustrup Programming Principles and Practice Using C++",
                6200,
            ),
        ],
    ),
    course(
        "CS204",
        "Advanced Programming",
        Obligatory,
        1,
        Some("CS201"),
        &[
            book("Lippman C++ Primer", 5400),
            book("Meyers Effective C++", 4200),
            book("Josuttis The C++ Standard Library", 6900),
        ],
    ),
    course(
        "MATH201",
        "Linear Algebra",
        Obligatory,
        1,
        None,
        &[
            book("Strang Introduction to Linear Algebra", 8900),
            book("Lay Linear Algebra and Its Applications", 17400),
            book("Axler Linear Algebra Done Right", 4500),
        ],
    ),
    course(
        "MATH204",
        "Discrete Mathematics",
        Obligatory,
        1,
        None,
        &[
            book("Rosen Discrete Mathematics and Its Applications", 18900),
            book("Epp Discrete Mathematics with Applications", 15200),
        ],
    ),
    course(
        "CS300",
        "Data Structures",
        Obligatory,
        1,
        Some("CS204"),
        &[
            book("Weiss Data Structures and Algorithm Analysis in C++", 14900),
            book("Goodrich Data Structures and Algorithms in C++", 12700),
            book("Drozdek Data Structures and Algorithms in C++", 11000),
        ],
    ),
    course(
        "CS301",
        "Algorithms",
        Obligatory,
        1,
        Some("CS300"),
        &[
            book("Cormen Introduction to Algorithms", 9900),
            book("Kleinberg Tardos Algorithm Design", 15600),
            book("Skiena The Algorithm Design Manual", 6400),
            book("Dasgupta Papadimitriou Vazirani Algorithms", 3800),
        ],
    ),
    course(
        "CS308",
        "Software Engineering",
        Obligatory,
        1,
        Some("CS204"),
        &[
            book("Sommerville Software Engineering", 16400),
            book(
                "Pressman Software Engineering A Practitioners Approach",
                17900,
            ),
            book("Gamma Design Patterns", 5300),
        ],
    ),
    course(
        "CS491",
        "Senior Design Project",
        Obligatory,
        1,
        Some("CS308"),
        &[
            book("Brooks The Mythical Man-Month", 3200),
            book("Hunt Thomas The Pragmatic Programmer", 4100),
        ],
    ),
    // Core.
    course(
        "MATH203",
        "Introduction to Probability",
        Core,
        12,
        None,
        &[
            book("Ross A First Course in Probability", 16900),
            book("Bertsekas Tsitsiklis Introduction to Probability", 8200),
            book("Grinstead Snell Introduction to Probability", 2500),
        ],
    ),
    course(
        "MATH212",
        "Differential Equations",
        Core,
        8,
        None,
        &[
            book("Boyce DiPrima Elementary Differential Equations", 17800),
            book("Zill A First Course in Differential Equations", 14500),
        ],
    ),
    course(
        "EE202",
        "Electronic Circuits",
        Core,
        6,
        None,
        &[
            book("Sedra Smith Microelectronic Circuits", 18500),
            book("Razavi Fundamentals of Microelectronics", 15900),
        ],
    ),
    course(
        "CS302",
        "Formal Languages and Automata Theory",
        Core,
        11,
        Some("MATH204"),
        &[
            book("Sipser Introduction to the Theory of Computation", 16200),
            book(
                "Hopcroft Motwani Ullman Introduction to Automata Theory",
                13900,
            ),
            book(
                "Linz An Introduction to Formal Languages and Automata",
                9600,
            ),
        ],
    ),
    course(
        "CS303",
        "Logic and Digital System Design",
        Core,
        10,
        None,
        &[
            book("Mano Digital Design", 14200),
            book("Harris Digital Design and Computer Architecture", 7900),
        ],
    ),
    course(
        "CS305",
        "Programming Languages",
        Core,
        10,
        Some("CS204"),
        &[
            book("Sebesta Concepts of Programming Languages", 15500),
            book("Scott Programming Language Pragmatics", 8700),
            book(
                "Abelson Sussman Structure and Interpretation of Computer Programs",
                5500,
            ),
        ],
    ),
    course(
        "CS306",
        "Database Systems",
        Core,
        12,
        Some("CS300"),
        &[
            book("Ramakrishnan Gehrke Database Management Systems", 13800),
            book("Silberschatz Database System Concepts", 14900),
            book("Elmasri Navathe Fundamentals of Database Systems", 16100),
        ],
    ),
    course(
        "CS307",
        "Operating Systems",
        Core,
        11,
        Some("CS300"),
        &[
            book("Silberschatz Operating System Concepts", 13600),
            book("Tanenbaum Modern Operating Systems", 14400),
            book("Arpaci-Dusseau Operating Systems Three Easy Pieces", 2500),
        ],
    ),
    course(
        "CS310",
        "Computer Organization",
        Core,
        8,
        Some("CS303"),
        &[
            book("Patterson Hennessy Computer Organization and Design", 9800),
            book(
                "Bryant OHallaron Computer Systems A Programmers Perspective",
                16800,
            ),
        ],
    ),
    course(
        "CS408",
        "Computer Networks",
        Core,
        9,
        Some("CS307"),
        &[
            book("Kurose Ross Computer Networking A Top-Down Approach", 15800),
            book("Tanenbaum Computer Networks", 14700),
            book("Peterson Davie Computer Networks A Systems Approach", 8400),
        ],
    ),
    // Technical-area electives: CS.
    course(
        "CS341",
        "Web Programming",
        Elective,
        8,
        Some("CS204"),
        &[
            book("Duckett HTML and CSS", 2900),
            book("Flanagan JavaScript The Definitive Guide", 5200),
        ],
    ),
    course(
        "CS403",
        "Distributed Systems",
        Elective,
        5,
        Some("CS307"),
        &[
            book("van Steen Tanenbaum Distributed Systems", 5900),
            book("Coulouris Distributed Systems Concepts and Design", 16500),
        ],
    ),
    course(
        "CS404",
        "Artificial Intelligence",
        Elective,
        10,
        Some("CS301"),
        &[
            book(
                "Russell Norvig Artificial Intelligence A Modern Approach",
                17500,
            ),
            book(
                "Poole Mackworth Artificial Intelligence Foundations of Computational Agents",
                6900,
            ),
        ],
    ),
    course(
        "CS405",
        "Computer Graphics",
        Elective,
        5,
        Some("MATH201"),
        &[
            book("Hughes Computer Graphics Principles and Practice", 8500),
            book("Shirley Fundamentals of Computer Graphics", 9500),
        ],
    ),
    course(
        "CS406",
        "Parallel Computing",
        Elective,
        4,
        Some("CS300"),
        &[
            book("Grama Introduction to Parallel Computing", 12400),
            book("Kirk Hwu Programming Massively Parallel Processors", 6800),
        ],
    ),
    course(
        "CS411",
        "Cryptography",
        Elective,
        6,
        Some("MATH204"),
        &[
            book("Katz Lindell Introduction to Modern Cryptography", 8900),
            book("Stinson Cryptography Theory and Practice", 10400),
            book("Paar Pelzl Understanding Cryptography", 4700),
        ],
    ),
    course(
        "CS412",
        "Machine Learning",
        Elective,
        12,
        Some("MATH203"),
        &[
            book("Bishop Pattern Recognition and Machine Learning", 9400),
            book("Mitchell Machine Learning", 18200),
            book("Murphy Machine Learning A Probabilistic Perspective", 10500),
        ],
    ),
    course(
        "CS425",
        "Data Mining",
        Elective,
        7,
        Some("CS306"),
        &[
            book("Han Kamber Data Mining Concepts and Techniques", 7800),
            book("Tan Steinbach Kumar Introduction to Data Mining", 16000),
        ],
    ),
    course(
        "CS432",
        "Computer and Network Security",
        Elective,
        7,
        Some("CS408"),
        &[
            book("Stallings Cryptography and Network Security", 17100),
            book("Anderson Security Engineering", 6000),
        ],
    ),
    course(
        "CS437",
        "Compiler Design",
        Elective,
        4,
        Some("CS302"),
        &[
            book(
                "Aho Lam Sethi Ullman Compilers Principles Techniques and Tools",
                16600,
            ),
            book("Appel Modern Compiler Implementation in Java", 8100),
            book("Cooper Torczon Engineering a Compiler", 8800),
        ],
    ),
    course(
        "CS438",
        "Natural Language Processing",
        Elective,
        5,
        Some("CS412"),
        &[
            book("Jurafsky Martin Speech and Language Processing", 15300),
            book(
                "Manning Schutze Foundations of Statistical Natural Language Processing",
                9200,
            ),
        ],
    ),
    course(
        "CS445",
        "Human-Computer Interaction",
        Elective,
        5,
        None,
        &[
            book("Shneiderman Designing the User Interface", 13200),
            book("Norman The Design of Everyday Things", 2600),
        ],
    ),
    course(
        "CS449",
        "Computer Vision",
        Elective,
        5,
        Some("MATH201"),
        &[
            book("Szeliski Computer Vision Algorithms and Applications", 7500),
            book("Forsyth Ponce Computer Vision A Modern Approach", 17200),
        ],
    ),
    // Technical-area electives: MATH.
    course(
        "MATH301",
        "Numerical Analysis",
        Elective,
        6,
        Some("MATH201"),
        &[
            book("Burden Faires Numerical Analysis", 19500),
            book("Sauer Numerical Analysis", 15400),
        ],
    ),
    course(
        "MATH302",
        "Graph Theory",
        Elective,
        6,
        Some("MATH204"),
        &[
            book("West Introduction to Graph Theory", 16800),
            book("Bondy Murty Graph Theory", 6500),
            book("Diestel Graph Theory", 5700),
        ],
    ),
    course(
        "MATH306",
        "Statistics",
        Elective,
        7,
        Some("MATH203"),
        &[
            book("Wasserman All of Statistics", 7400),
            book("Casella Berger Statistical Inference", 19200),
            book("DeGroot Schervish Probability and Statistics", 17300),
        ],
    ),
    course(
        "MATH311",
        "Abstract Algebra",
        Elective,
        4,
        None,
        &[
            book("Dummit Foote Abstract Algebra", 16300),
            book("Gallian Contemporary Abstract Algebra", 12900),
            book("Artin Algebra", 13000),
        ],
    ),
    course(
        "MATH403",
        "Combinatorics",
        Elective,
        3,
        Some("MATH302"),
        &[
            book("Stanley Enumerative Combinatorics", 6100),
            book("van Lint Wilson A Course in Combinatorics", 7000),
        ],
    ),
    course(
        "MATH405",
        "Number Theory",
        Elective,
        3,
        Some("MATH311"),
        &[
            book(
                "Niven Zuckerman An Introduction to the Theory of Numbers",
                14800,
            ),
            book(
                "Ireland Rosen A Classical Introduction to Modern Number Theory",
                6600,
            ),
        ],
    ),
    // Technical-area electives: EE.
    course(
        "EE301",
        "Signals and Systems",
        Elective,
        5,
        Some("MATH212"),
        &[
            book("Oppenheim Willsky Signals and Systems", 18100),
            book("Haykin Van Veen Signals and Systems", 11600),
        ],
    ),
    course(
        "EE308",
        "Microprocessors",
        Elective,
        4,
        Some("CS303"),
        &[
            book("Mazidi The AVR Microcontroller and Embedded Systems", 13300),
            book("Valvano Embedded Systems", 3600),
        ],
    ),
    course(
        "EE401",
        "Digital Signal Processing",
        Elective,
        4,
        Some("EE301"),
        &[
            book("Proakis Manolakis Digital Signal Processing", 17600),
            book("Lyons Understanding Digital Signal Processing", 9100),
        ],
    ),
    course(
        "EE407",
        "Communication Systems",
        Elective,
        3,
        Some("EE301"),
        &[
            book("Haykin Communication Systems", 15700),
            book("Proakis Salehi Communication Systems Engineering", 16600),
        ],
    ),
    course(
        "EE411",
        "Robotics",
        Elective,
        4,
        Some("MATH201"),
        &[
            book("Craig Introduction to Robotics", 14100),
            book("Siciliano Robotics Modelling Planning and Control", 8900),
        ],
    ),
    // Technical-area electives: PHYS.
    course(
        "PHYS211",
        "Modern Physics",
        Elective,
        4,
        None,
        &[
            book("Serway Moses Moyer Modern Physics", 15100),
            book("Krane Modern Physics", 13700),
        ],
    ),
    course(
        "PHYS301",
        "Quantum Mechanics",
        Elective,
        3,
        Some("PHYS211"),
        &[
            book("Griffiths Introduction to Quantum Mechanics", 8600),
            book("Shankar Principles of Quantum Mechanics", 7700),
            book("Sakurai Modern Quantum Mechanics", 6300),
        ],
    ),
    course(
        "PHYS303",
        "Electromagnetism",
        Elective,
        3,
        Some("MATH212"),
        &[
            book("Griffiths Introduction to Electrodynamics", 9300),
            book("Purcell Electricity and Magnetism", 6700),
        ],
    ),
    course(
        "PHYS405",
        "Quantum Computing",
        Elective,
        4,
        Some("MATH201"),
        &[
            book(
                "Nielsen Chuang Quantum Computation and Quantum Information",
                7300,
            ),
            book("Mermin Quantum Computer Science", 4300),
        ],
    ),
];

// ---------------------------------------------------------------------------------------------
// The numbers 000 leaves open
// ---------------------------------------------------------------------------------------------

/// Core courses per student, drawn by weight from the 10 in the pool (000: "a fixed number").
pub const CORE_PER_STUDENT: usize = 6;
/// Technical-area electives per student, uniform in this range (000: "a varying number").
/// With the 8 obligatory and 6 core courses: 18-22 courses, 20 on average (000: "approximately
/// 20 courses per student").
pub const ELECTIVES_MIN: usize = 4;
pub const ELECTIVES_MAX: usize = 8;

/// Electives of a student's major's area are this many times more likely.
const MAJOR_AFFINITY: u32 = 4;

/// Graduation years, each equally likely (000: "approximately the same number of students
/// graduate every year"): eight cohorts up to the thesis's own year.
const FIRST_GRADUATION: i64 = 2008;
const LAST_GRADUATION: i64 = 2015;

/// Age at graduation and its relative frequency; year of birth = graduation year - age, so
/// years of birth span 1984-1994.
const GRADUATION_AGE: [(i64, u32); 4] = [(21, 10), (22, 60), (23, 25), (24, 5)];

/// GPA ~ Normal(2.80, 0.60), clipped to [0.00, 4.00], in hundredths. 000 took the mean and
/// deviation from a sample of 30 graduates it does not publish; these are typical values that
/// keep every 0.25-wide bucket of the declarations under ~18% of students.
const GPA_MEAN: i64 = 280;
const GPA_SD: i64 = 60;

/// A grade is the letter nearest to GPA + bonus + Normal(0, 0.50) (hundredths of grade
/// points): obligatory courses are graded better (000: "most students perform better in
/// obligatory courses"), the others slightly worse so the grades still average near the GPA.
const OBLIGATORY_BONUS: i64 = 25;
const CORE_BONUS: i64 = -5;
const ELECTIVE_BONUS: i64 = -10;
const GRADE_NOISE_SD: i64 = 50;

/// Letter grades and their points in hundredths, best first.
pub const LETTER_GRADES: [(&str, i64); 11] = [
    ("A", 400),
    ("A-", 370),
    ("B+", 330),
    ("B", 300),
    ("B-", 270),
    ("C+", 230),
    ("C", 200),
    ("C-", 170),
    ("D+", 130),
    ("D", 100),
    ("F", 0),
];

/// Books bought per enrollment (000: "0 to 2 books for each course") and their relative
/// frequency: 0.95 on average, which with 20 courses per student puts syntheticS near 40,000
/// vertices and syntheticT (plus about 4 years per student) near 44,000.
const BOOKS_BOUGHT: [(usize, u32); 3] = [(0, 30), (1, 45), (2, 25)];

/// Percent of copies bought used, at a uniform 60-85% of the list price, which spreads the
/// (sensitive) prices instead of repeating a few list prices.
const USED_PERCENT: u32 = 35;
const USED_PRICE_PERCENT_MIN: u32 = 60;
const USED_PRICE_PERCENT_MAX: u32 = 85;

/// Relative frequency of freshman, sophomore, junior, senior per course level (2xx, 3xx,
/// 4xx): the usual timeframe with some noise (000: "the usual timeframe in which the course
/// is actually taken"). A prerequisite then moves a course no earlier than the course it
/// enables ([`draw_years`]).
const YEAR_WEIGHTS: [[u32; 4]; 3] = [[50, 40, 10, 0], [0, 20, 60, 20], [0, 0, 25, 75]];

// ---------------------------------------------------------------------------------------------
// Generation
// ---------------------------------------------------------------------------------------------

/// 000's syntheticS (`years = false`) or syntheticT (`years = true`) with `students` students,
/// deterministic in `seed`.
///
/// Tables (integer keys, dense and sequential from 1 in generation order):
/// `students(student_id PK, major TEXT, yob INTEGER, gpa REAL)`;
/// syntheticT only: `years(year_id PK, student_id FK -> students, year_level TEXT)`, one row
/// per year in which the student took courses;
/// `enrollments(enrollment_id PK, student_id FK -> students | year_id FK -> years, course
/// TEXT, grade TEXT)`; `purchases(purchase_id PK, enrollment_id FK -> enrollments, book TEXT,
/// price REAL)`.
///
/// Per student: a major ([`SYNTHETIC_MAJORS`]), a year of birth from a uniform graduation year
/// ([`GRADUATION_AGE`]), a GPA ([`GPA_MEAN`]); every obligatory course, [`CORE_PER_STUDENT`]
/// core courses and [`ELECTIVES_MIN`]..=[`ELECTIVES_MAX`] electives by weight (electives of
/// the major's area boosted); per course a college year ([`YEAR_WEIGHTS`]), a letter grade
/// ([`LETTER_GRADES`]) and 0-2 distinct textbooks of the course ([`BOOKS_BOUGHT`]), new or
/// used ([`USED_PERCENT`]).
pub fn synthetic(students: usize, seed: u64, years: bool) -> ReleaseSet {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let pools = Pools::of_catalog();
    let records: Vec<StudentRecord> = (0..students)
        .map(|_| draw_student(&mut rng, &pools))
        .collect();
    let mut rows = Rows::default();
    for record in &records {
        rows.push_student(record, years);
    }
    rows.into_release(years)
}

/// One simulated student before it becomes rows.
struct StudentRecord {
    major: &'static str,
    yob: i64,
    gpa_hundredths: i64,
    /// In catalog order.
    enrollments: Vec<Enrollment>,
}

struct Enrollment {
    course: &'static str,
    /// Index into [`YEAR_LEVELS`].
    year: usize,
    grade: &'static str,
    /// (title, price in cents).
    purchases: Vec<(&'static str, u32)>,
}

/// Catalog indices by requirement, and majors, with the weights the draws use.
struct Pools {
    majors: Vec<(usize, u32)>,
    obligatory: Vec<usize>,
    core: Vec<(usize, u32)>,
    electives: Vec<(usize, u32)>,
}

impl Pools {
    fn of_catalog() -> Pools {
        let of = |r: Requirement| -> Vec<(usize, u32)> {
            SYNTHETIC_COURSES
                .iter()
                .enumerate()
                .filter(|(_, c)| c.requirement == r)
                .map(|(i, c)| (i, c.weight))
                .collect()
        };
        Pools {
            majors: SYNTHETIC_MAJORS
                .iter()
                .enumerate()
                .map(|(i, m)| (i, m.percent))
                .collect(),
            obligatory: of(Obligatory).into_iter().map(|(i, _)| i).collect(),
            core: of(Core),
            electives: of(Elective),
        }
    }
}

fn draw_student(rng: &mut ChaCha8Rng, pools: &Pools) -> StudentRecord {
    let major = &SYNTHETIC_MAJORS[weighted_pick(rng, &pools.majors).unwrap_or(0)];
    let graduation = rng.random_range(FIRST_GRADUATION..=LAST_GRADUATION);
    let age = weighted_pick(rng, &GRADUATION_AGE).unwrap_or(22);
    let gpa_hundredths = normal(rng, GPA_MEAN, GPA_SD).clamp(0, 400);
    let courses = draw_courses(rng, major, pools);
    let years = draw_years(rng, &courses);
    let mut enrollments = Vec::with_capacity(courses.len());
    for (&index, year) in courses.iter().zip(years) {
        let spec = &SYNTHETIC_COURSES[index];
        let grade = draw_grade(rng, gpa_hundredths, spec.requirement);
        let purchases = draw_purchases(rng, spec);
        enrollments.push(Enrollment {
            course: spec.id,
            year,
            grade,
            purchases,
        });
    }
    StudentRecord {
        major: major.name,
        yob: graduation - age,
        gpa_hundredths,
        enrollments,
    }
}

/// Every obligatory course, [`CORE_PER_STUDENT`] core courses and a varying number of
/// electives, as catalog indices in catalog order (prerequisites first).
fn draw_courses(rng: &mut ChaCha8Rng, major: &Major, pools: &Pools) -> Vec<usize> {
    let mut taken = pools.obligatory.clone();
    taken.extend(weighted_sample(rng, &pools.core, CORE_PER_STUDENT));
    let n_electives = rng.random_range(ELECTIVES_MIN..=ELECTIVES_MAX);
    let boosted: Vec<(usize, u32)> = pools
        .electives
        .iter()
        .map(|&(i, w)| {
            let home = area(SYNTHETIC_COURSES[i].id) == major.area;
            (i, if home { w * MAJOR_AFFINITY } else { w })
        })
        .collect();
    taken.extend(weighted_sample(rng, &boosted, n_electives));
    taken.sort_unstable();
    taken
}

/// A college year per course (index into [`YEAR_LEVELS`]): drawn from the course's level,
/// then raised to the year of its prerequisite if the student took that too (000: the
/// division "was probabilistic based on whether the course is a pre-requisite for any of the
/// other courses the student took"). `courses` is in catalog order, so a prerequisite's year
/// is settled before the courses that need it.
fn draw_years(rng: &mut ChaCha8Rng, courses: &[usize]) -> Vec<usize> {
    let mut years: Vec<usize> = Vec::with_capacity(courses.len());
    for (pos, &index) in courses.iter().enumerate() {
        let spec = &SYNTHETIC_COURSES[index];
        let weights: Vec<(usize, u32)> = year_weights(spec.id).into_iter().enumerate().collect();
        let mut year = weighted_pick(rng, &weights).unwrap_or(YEAR_LEVELS.len() - 1);
        let before = spec.prerequisite.and_then(|p| {
            courses[..pos]
                .iter()
                .position(|&c| SYNTHETIC_COURSES[c].id == p)
        });
        if let Some(j) = before {
            year = year.max(years[j]);
        }
        years.push(year);
    }
    years
}

/// [`YEAR_WEIGHTS`] of the course's level; an unknown level counts as 4xx.
fn year_weights(id: &str) -> [u32; 4] {
    match level(id) {
        Some(2) => YEAR_WEIGHTS[0],
        Some(3) => YEAR_WEIGHTS[1],
        _ => YEAR_WEIGHTS[2],
    }
}

fn draw_grade(rng: &mut ChaCha8Rng, gpa_hundredths: i64, requirement: Requirement) -> &'static str {
    let bonus = match requirement {
        Obligatory => OBLIGATORY_BONUS,
        Core => CORE_BONUS,
        Elective => ELECTIVE_BONUS,
    };
    letter_grade(gpa_hundredths + bonus + normal(rng, 0, GRADE_NOISE_SD))
}

/// The letter whose points are nearest to `score` (hundredths); a tie goes to the better one.
fn letter_grade(score: i64) -> &'static str {
    let mut best = LETTER_GRADES[0];
    for g in LETTER_GRADES {
        if (score - g.1).abs() < (score - best.1).abs() {
            best = g;
        }
    }
    best.0
}

/// 0-2 distinct textbooks of the course, each equally likely, new or used.
fn draw_purchases(rng: &mut ChaCha8Rng, spec: &SyntheticCourse) -> Vec<(&'static str, u32)> {
    let wanted = weighted_pick(rng, &BOOKS_BOUGHT)
        .unwrap_or(0)
        .min(spec.books.len());
    let offered: Vec<(usize, u32)> = (0..spec.books.len()).map(|i| (i, 1)).collect();
    weighted_sample(rng, &offered, wanted)
        .into_iter()
        .map(|i| {
            let textbook = &spec.books[i];
            (textbook.title, price_paid(rng, textbook))
        })
        .collect()
}

fn price_paid(rng: &mut ChaCha8Rng, textbook: &Textbook) -> u32 {
    if rng.random_ratio(USED_PERCENT, 100) {
        let percent = rng.random_range(USED_PRICE_PERCENT_MIN..=USED_PRICE_PERCENT_MAX);
        textbook.price_cents * percent / 100
    } else {
        textbook.price_cents
    }
}

/// Normal(mean, sd) rounded to an integer: the Irwin-Hall sum of 12 uniforms on 0..=1000 has
/// mean 6000 and standard deviation 1001, and needs no `ln`/`cos` (see the module docs of
/// [`super`]). Its tails stop at 6 sd, which no clipped GPA or grade notices.
fn normal(rng: &mut ChaCha8Rng, mean: i64, sd: i64) -> i64 {
    let sum: i64 = (0..12).map(|_| rng.random_range(0..=1000i64)).sum();
    mean + (sum - 6000) * sd / 1000
}

/// A course id's area: `CS` of `CS301`.
fn area(id: &str) -> &str {
    id.trim_end_matches(|c: char| c.is_ascii_digit())
}

/// A course id's level: 3 of `CS301`.
fn level(id: &str) -> Option<u32> {
    id[area(id).len()..].chars().next()?.to_digit(10)
}

/// The course hierarchy's second level: `CS3xx` of `CS301`.
fn level_group(id: &str) -> String {
    match level(id) {
        Some(l) => format!("{}{l}xx", area(id)),
        None => area(id).to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// Rows and tables
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct Rows {
    student_id: Vec<i64>,
    major: Vec<&'static str>,
    yob: Vec<i64>,
    gpa: Vec<f64>,
    year_id: Vec<i64>,
    year_student: Vec<i64>,
    year_level: Vec<&'static str>,
    enrollment_id: Vec<i64>,
    enrollment_parent: Vec<i64>,
    course: Vec<&'static str>,
    grade: Vec<&'static str>,
    purchase_id: Vec<i64>,
    purchase_enrollment: Vec<i64>,
    book: Vec<&'static str>,
    price: Vec<f64>,
}

impl Rows {
    /// Appends one student: enrollments under the student (syntheticS) or under one `years`
    /// row per college year, earliest first (syntheticT).
    fn push_student(&mut self, record: &StudentRecord, years: bool) {
        let sid = self.student_id.len() as i64 + 1;
        self.student_id.push(sid);
        self.major.push(record.major);
        self.yob.push(record.yob);
        self.gpa.push(record.gpa_hundredths as f64 / 100.0);
        if !years {
            for e in &record.enrollments {
                self.push_enrollment(sid, e);
            }
            return;
        }
        let mut by_year: BTreeMap<usize, Vec<&Enrollment>> = BTreeMap::new();
        for e in &record.enrollments {
            by_year.entry(e.year).or_default().push(e);
        }
        for (year, enrollments) in by_year {
            let year_id = self.year_id.len() as i64 + 1;
            self.year_id.push(year_id);
            self.year_student.push(sid);
            self.year_level
                .push(YEAR_LEVELS.get(year).map_or("senior", |y| y.0));
            for e in enrollments {
                self.push_enrollment(year_id, e);
            }
        }
    }

    fn push_enrollment(&mut self, parent: i64, e: &Enrollment) {
        let id = self.enrollment_id.len() as i64 + 1;
        self.enrollment_id.push(id);
        self.enrollment_parent.push(parent);
        self.course.push(e.course);
        self.grade.push(e.grade);
        for &(title, cents) in &e.purchases {
            self.purchase_id.push(self.purchase_id.len() as i64 + 1);
            self.purchase_enrollment.push(id);
            self.book.push(title);
            self.price.push(f64::from(cents) / 100.0);
        }
    }

    fn into_release(self, years: bool) -> ReleaseSet {
        let students = batch(
            vec![
                int_field("student_id"),
                text_field("major"),
                int_field("yob"),
                Field::new("gpa", DataType::Float64, false),
            ],
            vec![
                int_array(self.student_id),
                text_array(self.major),
                int_array(self.yob),
                Arc::new(Float64Array::from(self.gpa)),
            ],
        );
        let enrollment_parent = if years { "year_id" } else { "student_id" };
        let enrollments = batch(
            vec![
                int_field("enrollment_id"),
                int_field(enrollment_parent),
                text_field("course"),
                text_field("grade"),
            ],
            vec![
                int_array(self.enrollment_id),
                int_array(self.enrollment_parent),
                text_array(self.course),
                text_array(self.grade),
            ],
        );
        let purchases = batch(
            vec![
                int_field("purchase_id"),
                int_field("enrollment_id"),
                text_field("book"),
                Field::new("price", DataType::Float64, false),
            ],
            vec![
                int_array(self.purchase_id),
                int_array(self.purchase_enrollment),
                text_array(self.book),
                Arc::new(Float64Array::from(self.price)),
            ],
        );
        let mut tables = vec![release_table("students", students, "student_id", None)];
        if years {
            let years_batch = batch(
                vec![
                    int_field("year_id"),
                    int_field("student_id"),
                    text_field("year_level"),
                ],
                vec![
                    int_array(self.year_id),
                    int_array(self.year_student),
                    text_array(self.year_level),
                ],
            );
            tables.push(release_table(
                "years",
                years_batch,
                "year_id",
                Some(("student_id", "students")),
            ));
        }
        let parent_table = if years { "years" } else { "students" };
        tables.push(release_table(
            "enrollments",
            enrollments,
            "enrollment_id",
            Some((enrollment_parent, parent_table)),
        ));
        tables.push(release_table(
            "purchases",
            purchases,
            "purchase_id",
            Some(("enrollment_id", "enrollments")),
        ));
        ReleaseSet {
            tables,
            views: vec![],
        }
    }
}

fn int_field(name: &str) -> Field {
    Field::new(name, DataType::Int64, false)
}

fn int_array(values: Vec<i64>) -> ArrayRef {
    Arc::new(Int64Array::from(values))
}

fn text_array(values: Vec<&'static str>) -> ArrayRef {
    Arc::new(StringArray::from(values))
}

/// A table keyed by `key`; `parent` is (FK column, parent table), the FK column having the
/// same name as the parent's key, as in the university generator.
fn release_table(
    name: &str,
    batch: RecordBatch,
    key: &str,
    parent: Option<(&str, &str)>,
) -> ReleaseTable {
    ReleaseTable {
        name: name.into(),
        batch,
        primary_key: vec![key.into()],
        foreign_keys: parent
            .map(|(column, ref_table)| ForeignKey {
                columns: vec![column.into()],
                ref_table: ref_table.into(),
                ref_columns: vec![column.into()],
            })
            .into_iter()
            .collect(),
    }
}

// ---------------------------------------------------------------------------------------------
// Hierarchies (ARX layout: leaf;parent;...;*)
// ---------------------------------------------------------------------------------------------

/// `course;level group;area;*`, e.g. `CS301;CS3xx;CS;*` (000: "We set DGHs of courses
/// according to their IDs").
pub fn synthetic_course_hierarchy_csv() -> String {
    SYNTHETIC_COURSES
        .iter()
        .map(|c| format!("{};{};{};*\n", c.id, level_group(c.id), area(c.id)))
        .collect()
}

/// `book;course;area;*`: a book first generalizes to the course it was bought for, then to
/// the course's area, so a generalized book still says which course it served.
pub fn synthetic_book_hierarchy_csv() -> String {
    SYNTHETIC_COURSES
        .iter()
        .flat_map(|c| {
            c.books
                .iter()
                .map(move |b| format!("{};{};{};*\n", b.title, c.id, area(c.id)))
        })
        .collect()
}

/// `major;faculty;*`.
pub fn synthetic_major_hierarchy_csv() -> String {
    SYNTHETIC_MAJORS
        .iter()
        .map(|m| format!("{};{};*\n", m.name, m.faculty))
        .collect()
}

/// `year_level;lower|upper;*`.
pub fn synthetic_year_hierarchy_csv() -> String {
    YEAR_LEVELS
        .iter()
        .map(|(year, division)| format!("{year};{division};*\n"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use std::collections::{BTreeSet, HashMap, HashSet};

    const STUDENTS: usize = 200;

    /// The policy line of `sql/synthetic_{s,t}.sql`; swapped for a k-anonymity line before
    /// parsing until this tree's parser knows the l-diversity model.
    const L_DIVERSITY: &str = "ANONYMIZE student WITH (model = 'l-diversity', l = 3, algorithm = 'clustree', mapping = 'lsap', m = 4, s = 0.5);";
    const K_ANONYMITY: &str = "ANONYMIZE student WITH (k = 3);";

    const DECLARATIONS: [(&str, bool); 2] = [
        ("sql/synthetic_s.sql", false),
        ("sql/synthetic_t.sql", true),
    ];

    fn spec(id: &str) -> &'static SyntheticCourse {
        SYNTHETIC_COURSES
            .iter()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("{id} not in catalog"))
    }

    fn vertices(set: &ReleaseSet) -> usize {
        set.tables.iter().map(|t| t.batch.num_rows()).sum()
    }

    /// A declarations file parsed with its l-diversity line replaced (see [`L_DIVERSITY`]).
    fn policy(file: &str) -> crate::policy::Policy {
        let text = std::fs::read_to_string(manifest_path(file)).expect("declarations file");
        assert!(text.contains(L_DIVERSITY), "{file} lacks the policy line");
        crate::decl::parse(&text.replace(L_DIVERSITY, K_ANONYMITY))
            .unwrap_or_else(|e| panic!("{file}: {e}"))
    }

    fn buckets(policy: &crate::policy::Policy, table: &str, column: &str) -> Vec<f64> {
        policy
            .labels
            .iter()
            .find(|l| l.table == table && l.column.as_deref() == Some(column))
            .and_then(|l| match &l.role {
                crate::policy::Role::Sensitive { buckets } => buckets.clone(),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{table}.{column} has no BUCKETS"))
    }

    /// The largest share of `values` in one bucket `[b_i, b_i+1)` (the last one closed); every
    /// value must fall in some bucket.
    fn max_bucket_share(values: &[f64], bounds: &[f64]) -> f64 {
        let mut counts = vec![0usize; bounds.len() - 1];
        for &v in values {
            let last = bounds.len() - 2;
            let i = (0..=last)
                .find(|&i| {
                    bounds[i] <= v && (v < bounds[i + 1] || (i == last && v == bounds[i + 1]))
                })
                .unwrap_or_else(|| panic!("{v} outside the buckets {bounds:?}"));
            counts[i] += 1;
        }
        counts.iter().copied().max().unwrap_or(0) as f64 / values.len() as f64
    }

    /// Per student (syntheticS), the courses taken.
    fn courses_per_student(set: &ReleaseSet) -> BTreeMap<i64, Vec<String>> {
        let e = table(set, "enrollments");
        let mut out: BTreeMap<i64, Vec<String>> = BTreeMap::new();
        for (sid, c) in ints(e, "student_id").into_iter().zip(texts(e, "course")) {
            out.entry(sid).or_default().push(c);
        }
        out
    }

    #[test]
    fn synthetic_is_deterministic() {
        for years in [false, true] {
            let a = synthetic(STUDENTS, 7, years);
            let b = synthetic(STUDENTS, 7, years);
            let c = synthetic(STUDENTS, 8, years);
            assert_eq!(a.tables.len(), if years { 4 } else { 3 });
            for (x, y) in a.tables.iter().zip(&b.tables) {
                assert_eq!((&x.name, &x.batch), (&y.name, &y.batch));
            }
            assert_ne!(table(&a, "enrollments"), table(&c, "enrollments"));
            assert_ne!(table(&a, "purchases"), table(&c, "purchases"));
        }
    }

    /// Pins a digest of one seed so a change in rand / rand_chacha or in the draw order
    /// (which would silently change every experiment) fails here.
    #[test]
    fn synthetic_output_is_pinned() {
        let digest = |years: bool| {
            let set = synthetic(SYNTHETIC_STUDENTS, 42, years);
            let students = table(&set, "students");
            let enrollments = table(&set, "enrollments");
            let purchases = table(&set, "purchases");
            let rows: Vec<usize> = set.tables.iter().map(|t| t.batch.num_rows()).collect();
            let grades = texts(enrollments, "grade");
            (
                rows,
                ints(students, "yob").iter().sum::<i64>(),
                floats(students, "gpa")
                    .iter()
                    .map(|g| (g * 100.0).round() as i64)
                    .sum::<i64>(),
                grades.iter().filter(|g| *g == "A").count(),
                floats(purchases, "price")
                    .iter()
                    .map(|p| (p * 100.0).round() as i64)
                    .sum::<i64>(),
                texts(enrollments, "course")[..3].join("|"),
            )
        };
        assert_eq!(
            digest(false),
            (
                vec![1000, 20050, 19007],
                1989235,
                278446,
                2075,
                191310873,
                "CS201|CS204|MATH201".to_string()
            )
        );
        // The same records; enrollments grouped by college year, freshman first.
        assert_eq!(
            digest(true),
            (
                vec![1000, 3935, 20050, 19007],
                1989235,
                278446,
                2075,
                191310873,
                "CS201|MATH201|MATH212".to_string()
            )
        );
    }

    /// 000 Sec. 2.4: 1000 students, about 20 courses each; about 42,000 vertices.
    #[test]
    fn synthetic_sizes_match_the_thesis() {
        for years in [false, true] {
            let set = synthetic(SYNTHETIC_STUDENTS, 1, years);
            let n = vertices(&set);
            let rows: Vec<(&str, usize)> = set
                .tables
                .iter()
                .map(|t| (t.name.as_str(), t.batch.num_rows()))
                .collect();
            eprintln!("synthetic years={years}: {n} vertices {rows:?}");
            assert!((38_000..=46_000).contains(&n), "{n} vertices");
            let per_student =
                table(&set, "enrollments").num_rows() as f64 / SYNTHETIC_STUDENTS as f64;
            assert!((19.5..=20.5).contains(&per_student), "{per_student}");
        }
    }

    #[test]
    fn synthetic_course_rules() {
        let set = synthetic(SYNTHETIC_STUDENTS, 2, false);
        let per_student = courses_per_student(&set);
        assert_eq!(
            per_student.len(),
            SYNTHETIC_STUDENTS,
            "every student takes courses"
        );
        let mut used = HashSet::new();
        for (sid, taken) in &per_student {
            let distinct: HashSet<&String> = taken.iter().collect();
            assert_eq!(
                distinct.len(),
                taken.len(),
                "student {sid} repeats a course"
            );
            let count = |r: Requirement| taken.iter().filter(|c| spec(c).requirement == r).count();
            assert_eq!(count(Obligatory), 8, "student {sid}");
            assert_eq!(count(Core), CORE_PER_STUDENT, "student {sid}");
            assert!(
                (ELECTIVES_MIN..=ELECTIVES_MAX).contains(&count(Elective)),
                "student {sid}"
            );
            used.extend(taken.iter().cloned());
        }
        assert_eq!(used.len(), SYNTHETIC_COURSES.len(), "every course is taken");
        let majors: HashSet<String> = texts(table(&set, "students"), "major")
            .into_iter()
            .collect();
        assert_eq!(majors.len(), SYNTHETIC_MAJORS.len(), "every major occurs");
        let yob = ints(table(&set, "students"), "yob");
        assert!(yob.iter().all(|y| (1984..=1994).contains(y)), "{yob:?}");
    }

    #[test]
    fn synthetic_books_per_enrollment() {
        let set = synthetic(STUDENTS, 3, false);
        let e = table(&set, "enrollments");
        let p = table(&set, "purchases");
        let course_of: HashMap<i64, String> = ints(e, "enrollment_id")
            .into_iter()
            .zip(texts(e, "course"))
            .collect();
        let mut bought: HashMap<i64, Vec<String>> = HashMap::new();
        for (eid, title) in ints(p, "enrollment_id").into_iter().zip(texts(p, "book")) {
            bought.entry(eid).or_default().push(title);
        }
        let mut by_count = [0usize; 3];
        for (eid, course) in &course_of {
            let titles = bought.get(eid).map(Vec::as_slice).unwrap_or(&[]);
            assert!(titles.len() <= 2, "enrollment {eid} bought {titles:?}");
            by_count[titles.len()] += 1;
            let distinct: HashSet<&str> = titles.iter().map(String::as_str).collect();
            assert_eq!(
                distinct.len(),
                titles.len(),
                "enrollment {eid} buys a book twice"
            );
            let offered: HashSet<&str> = spec(course).books.iter().map(|b| b.title).collect();
            assert!(distinct.is_subset(&offered), "enrollment {eid}: {titles:?}");
        }
        assert!(
            by_count.iter().all(|&n| n > 0),
            "0, 1 and 2 books all occur: {by_count:?}"
        );
        for price in floats(p, "price") {
            assert!((15.0..200.0).contains(&price), "{price}");
        }
    }

    /// Each year row's courses fit the year (2xx: freshman-junior, 3xx: sophomore-senior, 4xx:
    /// junior-senior), a prerequisite is never taken after the course it enables, a student
    /// has at most one row per year and no empty year.
    #[test]
    fn synthetic_t_years_are_consistent() {
        let set = synthetic(SYNTHETIC_STUDENTS, 4, true);
        let y = table(&set, "years");
        let e = table(&set, "enrollments");
        let year_of: HashMap<i64, (i64, usize)> = ints(y, "year_id")
            .into_iter()
            .zip(
                ints(y, "student_id")
                    .into_iter()
                    .zip(texts(y, "year_level")),
            )
            .map(|(id, (sid, level))| {
                let index = YEAR_LEVELS
                    .iter()
                    .position(|l| l.0 == level)
                    .unwrap_or_else(|| panic!("unknown year level {level}"));
                (id, (sid, index))
            })
            .collect();
        let distinct: HashSet<(i64, usize)> = year_of.values().copied().collect();
        assert_eq!(distinct.len(), year_of.len(), "a student has a year twice");
        let mut taken: HashMap<(i64, String), usize> = HashMap::new();
        let mut non_empty = HashSet::new();
        for (year_id, course) in ints(e, "year_id").into_iter().zip(texts(e, "course")) {
            let (sid, year) = year_of[&year_id];
            non_empty.insert(year_id);
            let window = match level(&course) {
                Some(2) => 0..=2,
                Some(3) => 1..=3,
                _ => 2..=3,
            };
            assert!(window.contains(&year), "{course} in year {year}");
            assert!(taken.insert((sid, course), year).is_none(), "course twice");
        }
        assert_eq!(non_empty.len(), year_of.len(), "a year without courses");
        for ((sid, course), &year) in &taken {
            if let Some(pre) = spec(course).prerequisite {
                if let Some(&before) = taken.get(&(*sid, pre.to_string())) {
                    assert!(before <= year, "student {sid}: {pre} after {course}");
                }
            }
        }
        // Every level occurs, and a typical student studies all four years.
        let levels: HashSet<usize> = year_of.values().map(|v| v.1).collect();
        assert_eq!(levels.len(), 4);
        let per_student = year_of.len() as f64 / SYNTHETIC_STUDENTS as f64;
        assert!(
            (3.5..=4.0).contains(&per_student),
            "{per_student} years per student"
        );
    }

    /// A seed names the same records in both datasets; syntheticT only adds the years.
    #[test]
    fn synthetic_s_and_t_share_records() {
        let s = synthetic(STUDENTS, 5, false);
        let t = synthetic(STUDENTS, 5, true);
        assert_eq!(table(&s, "students"), table(&t, "students"));
        let y = table(&t, "years");
        let student_of: HashMap<i64, i64> = ints(y, "year_id")
            .into_iter()
            .zip(ints(y, "student_id"))
            .collect();
        let rows = |set: &ReleaseSet, parent: &str| -> BTreeSet<(i64, String, String)> {
            let e = table(set, "enrollments");
            ints(e, parent)
                .into_iter()
                .zip(texts(e, "course").into_iter().zip(texts(e, "grade")))
                .map(|(p, (c, g))| (p, c, g))
                .collect()
        };
        let s_rows = rows(&s, "student_id");
        let t_rows: BTreeSet<(i64, String, String)> = rows(&t, "year_id")
            .into_iter()
            .map(|(year, c, g)| (student_of[&year], c, g))
            .collect();
        assert_eq!(s_rows, t_rows);
        let mut s_books = texts(table(&s, "purchases"), "book");
        let mut t_books = texts(table(&t, "purchases"), "book");
        s_books.sort();
        t_books.sort();
        assert_eq!(s_books, t_books);
    }

    #[test]
    fn synthetic_catalog_is_consistent() {
        let mut ids = HashSet::new();
        let mut titles = HashSet::new();
        let areas: HashSet<&str> = SYNTHETIC_MAJORS.iter().map(|m| m.area).collect();
        for (i, c) in SYNTHETIC_COURSES.iter().enumerate() {
            assert!(ids.insert(c.id), "course {} twice", c.id);
            assert!(matches!(level(c.id), Some(2..=4)), "{}", c.id);
            assert!(areas.contains(area(c.id)), "{} has no major's area", c.id);
            assert!((2..=4).contains(&c.books.len()), "{}", c.id);
            assert!(c.weight > 0, "{}", c.id);
            for b in c.books {
                assert!(titles.insert(b.title), "book {} in two courses", b.title);
                assert!(!b.title.contains([';', ',', '\'', '"']), "{}", b.title);
                assert!((2500..=19500).contains(&b.price_cents), "{}", b.title);
            }
            if let Some(pre) = c.prerequisite {
                let j = SYNTHETIC_COURSES
                    .iter()
                    .position(|p| p.id == pre)
                    .unwrap_or_else(|| panic!("{}: unknown prerequisite {pre}", c.id));
                assert!(j < i, "{}: prerequisite {pre} listed later", c.id);
                assert!(level(pre) <= level(c.id), "{}: prerequisite {pre}", c.id);
            }
        }
        let pool = |r: Requirement| {
            SYNTHETIC_COURSES
                .iter()
                .filter(|c| c.requirement == r)
                .count()
        };
        assert_eq!((pool(Obligatory), pool(Core), pool(Elective)), (8, 10, 28));
        assert_eq!(SYNTHETIC_MAJORS.iter().map(|m| m.percent).sum::<u32>(), 100);
    }

    #[test]
    fn letter_grades_round_to_the_nearest() {
        assert_eq!(letter_grade(460), "A");
        assert_eq!(letter_grade(385), "A");
        assert_eq!(letter_grade(384), "A-");
        assert_eq!(letter_grade(300), "B");
        assert_eq!(letter_grade(50), "D");
        assert_eq!(letter_grade(49), "F");
        assert_eq!(letter_grade(-80), "F");
    }

    /// l-diversity needs spread sensitive values: no GPA or price bucket of the declarations
    /// holds more than ~20%, and almost every course sees 5 or more distinct grades.
    #[test]
    fn synthetic_sensitive_values_are_diverse() {
        let policy = policy("sql/synthetic_s.sql");
        let set = synthetic(SYNTHETIC_STUDENTS, 6, false);
        let gpa = floats(table(&set, "students"), "gpa");
        let price = floats(table(&set, "purchases"), "price");
        let gpa_share = max_bucket_share(&gpa, &buckets(&policy, "students", "gpa"));
        let price_share = max_bucket_share(&price, &buckets(&policy, "purchases", "price"));
        let e = table(&set, "enrollments");
        let mut grades: HashMap<String, HashSet<String>> = HashMap::new();
        for (c, g) in texts(e, "course").into_iter().zip(texts(e, "grade")) {
            grades.entry(c).or_default().insert(g);
        }
        let narrow: Vec<(&String, usize)> = grades
            .iter()
            .filter(|(_, g)| g.len() < 5)
            .map(|(c, g)| (c, g.len()))
            .collect();
        let all: HashSet<&String> = grades.values().flatten().collect();
        eprintln!(
            "max bucket share: gpa {gpa_share:.3}, price {price_share:.3}; courses with < 5 grades: {narrow:?}; grades used: {}",
            all.len()
        );
        assert!(gpa_share <= 0.20, "gpa {gpa_share}");
        assert!(price_share <= 0.20, "price {price_share}");
        assert!(narrow.len() <= 2, "{narrow:?}");
        assert_eq!(all.len(), LETTER_GRADES.len(), "every letter occurs");
    }

    #[test]
    fn synthetic_hierarchy_files_cover_generated_values() {
        let files = [
            (
                "fixtures/hierarchies/synthetic_course.csv",
                synthetic_course_hierarchy_csv(),
            ),
            (
                "fixtures/hierarchies/synthetic_book.csv",
                synthetic_book_hierarchy_csv(),
            ),
            (
                "fixtures/hierarchies/synthetic_major.csv",
                synthetic_major_hierarchy_csv(),
            ),
            (
                "fixtures/hierarchies/synthetic_year.csv",
                synthetic_year_hierarchy_csv(),
            ),
        ];
        for (rel, content) in &files {
            check_fixture(rel, content);
        }
        let h: Vec<HashMap<String, Vec<String>>> =
            files.iter().map(|(rel, _)| read_hierarchy(rel)).collect();
        let set = synthetic(STUDENTS, 11, true);
        let columns = [
            ("enrollments", "course"),
            ("purchases", "book"),
            ("students", "major"),
            ("years", "year_level"),
        ];
        for (hierarchy, (t, c)) in h.iter().zip(columns) {
            for v in texts(table(&set, t), c) {
                assert!(hierarchy.contains_key(&v), "{t}.{c} = {v} is not a leaf");
            }
            // Every row has the same depth and no label is both a leaf and an inner node.
            let depths: BTreeSet<usize> = hierarchy.values().map(Vec::len).collect();
            assert_eq!(depths.len(), 1, "{t}.{c}: ragged hierarchy");
            for up in hierarchy.values() {
                for label in &up[..up.len() - 1] {
                    assert!(
                        !hierarchy.contains_key(label),
                        "{label} is leaf and inner node"
                    );
                }
            }
        }
    }

    /// Both declarations files parse (with the l-diversity line swapped, see [`L_DIVERSITY`]),
    /// plan against a generated warehouse (every column has a role, the hierarchy files are
    /// found) and load as a forest (every value is a leaf of its hierarchy).
    #[tokio::test]
    async fn synthetic_declarations_plan() {
        let dir = tempfile::tempdir().expect("tempdir");
        for (file, years) in DECLARATIONS {
            let policy = policy(file);
            let source = dir.path().join(if years { "t.sqlite" } else { "s.sqlite" });
            crate::warehouse::write_staged(&source, &synthetic(40, 1, years), false)
                .and_then(|s| s.commit())
                .expect("write warehouse");
            let mut wh = crate::warehouse::Warehouse::open(&source)
                .await
                .expect("open warehouse");
            let plan = crate::plan::build(&policy, &mut wh, &manifest_path("sql"))
                .await
                .unwrap_or_else(|e| panic!("{file}: {e}"));
            let names: Vec<&str> = plan.tables.iter().map(|t| t.name.as_str()).collect();
            let expected: &[&str] = if years {
                &["students", "years", "enrollments", "purchases"]
            } else {
                &["students", "enrollments", "purchases"]
            };
            assert_eq!(names, expected, "{file}");
            let qis: Vec<(&str, &str)> = plan.tables.iter().flat_map(|t| t.qi_columns()).collect();
            let expected_qis = if years { 5 } else { 4 };
            assert_eq!(qis.len(), expected_qis, "{file}: {qis:?}");
            let forest = crate::forest::load(&plan, &wh)
                .await
                .unwrap_or_else(|e| panic!("{file}: {e}"));
            assert_eq!(forest.entities(), 40, "{file}");
        }
    }
}
