//! 001 Sec. V: the synthetic university (1000 students, 22 courses, 1 obligatory + 2-3
//! technical + 2-3 non-technical electives, 2-4 textbooks per course). The catalog
//! ([`UNIVERSITY_COURSES`], [`UNIVERSITY_DEPARTMENTS`]) is the single source of the generated
//! values and of the hierarchy files `fixtures/hierarchies/university_{course,book}.csv`
//! rendered from it ([`university_course_hierarchy_csv`], [`university_book_hierarchy_csv`]).

use std::sync::Arc;

use arrow::array::{Float64Array, Int64Array, StringArray};
use arrow::datatypes::{DataType, Field};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{batch, family, text_field, weighted_pick, weighted_sample};
use crate::warehouse::ReleaseSet;

/// The number of students 001 Sec. V generates.
pub const UNIVERSITY_STUDENTS: usize = 1000;

/// Which requirement a course fills. The three pools are disjoint, so drawing each pool
/// without replacement never gives a student the same course twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pool {
    /// Every student takes exactly one of these.
    Obligatory,
    /// Every student takes 2 or 3 of these.
    TechnicalElective,
    /// Every student takes 2 or 3 of these.
    NonTechnicalElective,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Department {
    pub name: &'static str,
    /// The course hierarchy's second level: `Technical` or `Non-technical`.
    pub technical: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Textbook {
    pub title: &'static str,
    /// List price in cents; integer so prices are exact and platform-independent.
    pub price_cents: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CourseSpec {
    pub name: &'static str,
    /// One of [`UNIVERSITY_DEPARTMENTS`] by name.
    pub department: &'static str,
    pub pool: Pool,
    /// Relative popularity within the pool (> 0).
    pub weight: u32,
    /// The 2, 3 or 4 textbooks a student taking the course chooses from. Titles are unique
    /// over the catalog: a book's subject (its parent in the book hierarchy) must be one.
    pub books: &'static [Textbook],
}

pub const UNIVERSITY_DEPARTMENTS: [Department; 8] = [
    Department {
        name: "Mathematics",
        technical: true,
    },
    Department {
        name: "Computer Science",
        technical: true,
    },
    Department {
        name: "Physical Sciences",
        technical: true,
    },
    Department {
        name: "Electrical Engineering",
        technical: true,
    },
    Department {
        name: "Humanities",
        technical: false,
    },
    Department {
        name: "Languages",
        technical: false,
    },
    Department {
        name: "Arts",
        technical: false,
    },
    Department {
        name: "Social Sciences",
        technical: false,
    },
];

/// A catalog entry; `synthetic` builds its catalog with it too.
pub(super) const fn book(title: &'static str, price_cents: u32) -> Textbook {
    Textbook { title, price_cents }
}

/// The 22-course catalog of 001 Sec. V. The seed only says the distribution followed Bilkent
/// University's undergraduate requirements; the names, pools and weights here are ours: four
/// first-year obligatory courses, ten technical electives, eight non-technical electives, with
/// uneven popularity (Algorithms and Economics are crowded, Music and Signals are not).
pub const UNIVERSITY_COURSES: [CourseSpec; 22] = [
    // Obligatory.
    CourseSpec {
        name: "Calculus I",
        department: "Mathematics",
        pool: Pool::Obligatory,
        weight: 35,
        books: &[
            book("Stewart Calculus", 18950),
            book("Thomas Calculus", 16500),
            book("Spivak Calculus", 7200),
        ],
    },
    CourseSpec {
        name: "Physics I",
        department: "Physical Sciences",
        pool: Pool::Obligatory,
        weight: 25,
        books: &[
            book("Halliday Fundamentals of Physics", 17400),
            book("Serway Physics for Scientists and Engineers", 15900),
            book("Young University Physics", 16800),
            book("Feynman Lectures on Physics Vol 1", 5400),
        ],
    },
    CourseSpec {
        name: "Programming",
        department: "Computer Science",
        pool: Pool::Obligatory,
        weight: 25,
        books: &[
            book("Think Python", 3900),
            book("Deitel Java How to Program", 12800),
        ],
    },
    CourseSpec {
        name: "Academic English",
        department: "Languages",
        pool: Pool::Obligatory,
        weight: 15,
        books: &[
            book("They Say I Say", 2800),
            book("The Elements of Style", 1200),
            book("Oshima Writing Academic English", 4600),
        ],
    },
    // Technical electives.
    CourseSpec {
        name: "Linear Algebra",
        department: "Mathematics",
        pool: Pool::TechnicalElective,
        weight: 14,
        books: &[
            book("Strang Introduction to Linear Algebra", 8900),
            book("Axler Linear Algebra Done Right", 4500),
        ],
    },
    CourseSpec {
        name: "Discrete Math",
        department: "Mathematics",
        pool: Pool::TechnicalElective,
        weight: 12,
        books: &[
            book("Rosen Discrete Mathematics", 14200),
            book("Epp Discrete Mathematics with Applications", 13100),
            book("Graham Knuth Patashnik Concrete Mathematics", 6800),
        ],
    },
    CourseSpec {
        name: "Statistics",
        department: "Mathematics",
        pool: Pool::TechnicalElective,
        weight: 10,
        books: &[
            book("Wasserman All of Statistics", 7400),
            book("Devore Probability and Statistics", 15600),
            book("Freedman Statistics", 9800),
        ],
    },
    CourseSpec {
        name: "Data Structures",
        department: "Computer Science",
        pool: Pool::TechnicalElective,
        weight: 13,
        books: &[
            book("Weiss Data Structures and Algorithm Analysis", 11900),
            book("Goodrich Data Structures and Algorithms in Java", 10700),
        ],
    },
    CourseSpec {
        name: "Algorithms",
        department: "Computer Science",
        pool: Pool::TechnicalElective,
        weight: 16,
        books: &[
            book("Cormen Introduction to Algorithms", 9900),
            book("Kleinberg Tardos Algorithm Design", 12400),
            book("Sedgewick Algorithms", 6900),
            book("Skiena Algorithm Design Manual", 5900),
        ],
    },
    CourseSpec {
        name: "Databases",
        department: "Computer Science",
        pool: Pool::TechnicalElective,
        weight: 11,
        books: &[
            book("Ramakrishnan Database Management Systems", 13800),
            book("Silberschatz Database System Concepts", 14900),
            book("Garcia-Molina Database Systems", 12900),
        ],
    },
    CourseSpec {
        name: "Thermodynamics",
        department: "Physical Sciences",
        pool: Pool::TechnicalElective,
        weight: 6,
        books: &[
            book("Cengel Thermodynamics", 16200),
            book("Moran Engineering Thermodynamics", 15100),
        ],
    },
    CourseSpec {
        name: "Chemistry",
        department: "Physical Sciences",
        pool: Pool::TechnicalElective,
        weight: 8,
        books: &[
            book("Zumdahl Chemistry", 14500),
            book("Atkins Chemical Principles", 13300),
            book("Brown Chemistry The Central Science", 15800),
            book("Petrucci General Chemistry", 14100),
        ],
    },
    CourseSpec {
        name: "Circuits",
        department: "Electrical Engineering",
        pool: Pool::TechnicalElective,
        weight: 7,
        books: &[
            book("Nilsson Electric Circuits", 15400),
            book("Alexander Sadiku Fundamentals of Electric Circuits", 14700),
            book("Hayt Engineering Circuit Analysis", 13600),
        ],
    },
    CourseSpec {
        name: "Signals and Systems",
        department: "Electrical Engineering",
        pool: Pool::TechnicalElective,
        weight: 4,
        books: &[
            book("Oppenheim Signals and Systems", 16100),
            book("Haykin Signals and Systems", 11200),
        ],
    },
    // Non-technical electives.
    CourseSpec {
        name: "History",
        department: "Humanities",
        pool: Pool::NonTechnicalElective,
        weight: 12,
        books: &[
            book("Hobsbawm The Age of Revolution", 1900),
            book("McNeill The Rise of the West", 3500),
            book("Roberts History of the World", 4200),
        ],
    },
    CourseSpec {
        name: "Philosophy",
        department: "Humanities",
        pool: Pool::NonTechnicalElective,
        weight: 9,
        books: &[
            book("Russell History of Western Philosophy", 2400),
            book("Nagel What Does It All Mean", 1400),
            book("Blackburn Think", 1800),
            book("Plato The Republic", 1100),
        ],
    },
    CourseSpec {
        name: "Literature",
        department: "Humanities",
        pool: Pool::NonTechnicalElective,
        weight: 7,
        books: &[
            book("Norton Anthology of World Literature", 8600),
            book("Eagleton Literary Theory", 2700),
        ],
    },
    CourseSpec {
        name: "Art History",
        department: "Arts",
        pool: Pool::NonTechnicalElective,
        weight: 6,
        books: &[
            book("Gombrich The Story of Art", 4900),
            book("Janson History of Art", 11800),
            book("Berger Ways of Seeing", 1300),
        ],
    },
    CourseSpec {
        name: "Music",
        department: "Arts",
        pool: Pool::NonTechnicalElective,
        weight: 4,
        books: &[
            book("Kamien Music An Appreciation", 9700),
            book("Grout History of Western Music", 10400),
        ],
    },
    CourseSpec {
        name: "Economics",
        department: "Social Sciences",
        pool: Pool::NonTechnicalElective,
        weight: 16,
        books: &[
            book("Mankiw Principles of Economics", 17900),
            book("Samuelson Economics", 15200),
            book("Krugman Economics", 16300),
            book("Varian Intermediate Microeconomics", 12100),
        ],
    },
    CourseSpec {
        name: "Psychology",
        department: "Social Sciences",
        pool: Pool::NonTechnicalElective,
        weight: 14,
        books: &[
            book("Myers Psychology", 13400),
            book("Gleitman Psychology", 12600),
            book("Kahneman Thinking Fast and Slow", 1800),
        ],
    },
    CourseSpec {
        name: "Sociology",
        department: "Social Sciences",
        pool: Pool::NonTechnicalElective,
        weight: 8,
        books: &[
            book("Giddens Sociology", 6200),
            book("Macionis Sociology", 11300),
        ],
    },
];

/// Years of birth and their relative frequency: an undergraduate body peaking at 2003.
const YOB_WEIGHTS: [(i64, u32); 9] = [
    (1998, 2),
    (1999, 4),
    (2000, 8),
    (2001, 14),
    (2002, 20),
    (2003, 22),
    (2004, 18),
    (2005, 9),
    (2006, 3),
];

/// Percent of students recorded as `M` (an engineering-heavy school).
const MALE_PERCENT: u32 = 58;

/// Technical electives in the department of a student's obligatory course are this many
/// times more likely: a Programming student leans to CS electives.
const DEPARTMENT_AFFINITY: u32 = 3;

/// Percent of purchases that are used copies, sold at `USED_PRICE_PERCENT` of list price.
const USED_PERCENT: u32 = 30;
const USED_PRICE_PERCENT: u32 = 60;

/// The department a course belongs to.
fn department_of(course: &CourseSpec) -> Option<&'static Department> {
    UNIVERSITY_DEPARTMENTS
        .iter()
        .find(|d| d.name == course.department)
}

/// The synthetic university of 001 Sec. V with `students` students, deterministic in `seed`.
///
/// Tables: `students(sid INTEGER PK, name TEXT, yob INTEGER, sex TEXT, gpa REAL)`,
/// `courses(scid INTEGER PK, sid INTEGER FK -> students.sid, course TEXT, grade INTEGER)`,
/// `books(bid INTEGER PK, scid INTEGER FK -> courses.scid, book TEXT, price REAL)`.
///
/// Per student: sex, year of birth ([`YOB_WEIGHTS`]) and a GPA in [1.00, 4.00] (a bell shape
/// around 3.0 from a sum of four uniforms); one obligatory course, 2 or 3 technical and 2 or 3
/// non-technical electives, each pool drawn by weight without replacement, technical electives
/// boosted in the obligatory course's department; each grade follows the GPA (40 + 15 * GPA,
/// plus or minus 10). Per enrollment the student buys a uniformly random non-empty subset of
/// the course's textbooks (all 2^m - 1 subsets equally likely): the seed says only that each
/// course "had 2, 3 or 4 textbooks to choose from", and buying at least one keeps every
/// enrollment a tree with books, as in Table II. 30% of copies are bought used at 60% of list.
/// Keys are dense and sequential from 1 in generation order.
pub fn university(students: usize, seed: u64) -> ReleaseSet {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut s = StudentColumns::default();
    let mut c = CourseColumns::default();
    let mut b = BookColumns::default();

    let pool = |p: Pool| -> Vec<(usize, u32)> {
        UNIVERSITY_COURSES
            .iter()
            .enumerate()
            .filter(|(_, spec)| spec.pool == p)
            .map(|(i, spec)| (i, spec.weight))
            .collect()
    };
    let pools = Pools {
        obligatory: pool(Pool::Obligatory),
        technical: pool(Pool::TechnicalElective),
        non_technical: pool(Pool::NonTechnicalElective),
    };

    for sid in (1..).take(students) {
        let gpa_hundredths = draw_student(&mut rng, sid, &mut s);
        for course_index in draw_courses(&mut rng, &pools) {
            enroll(&mut rng, course_index, sid, gpa_hundredths, &mut c, &mut b);
        }
    }
    university_tables(s, c, b)
}

/// The course pools by weight, as (index into [`UNIVERSITY_COURSES`], weight).
struct Pools {
    obligatory: Vec<(usize, u32)>,
    technical: Vec<(usize, u32)>,
    non_technical: Vec<(usize, u32)>,
}

/// Draws one student's sex, year of birth and ability (in that order: the seed's stream
/// must not change) and appends the student; returns the GPA in hundredths, which the
/// student's grades follow.
fn draw_student(rng: &mut ChaCha8Rng, sid: i64, s: &mut StudentColumns) -> u32 {
    let sex = if rng.random_ratio(MALE_PERCENT, 100) {
        "M"
    } else {
        "F"
    };
    let yob = weighted_pick(rng, &YOB_WEIGHTS).unwrap_or(YOB_WEIGHTS[0].0);
    // Sum of four uniforms in 0..=100 is bell-shaped on 0..=400; mapped onto 100..=400
    // hundredths it centres on 3.00 with a standard deviation near 0.44.
    let ability: u32 = (0..4).map(|_| rng.random_range(0..=100u32)).sum();
    let gpa_hundredths = 100 + ability * 3 / 4;
    s.sid.push(sid);
    s.name.push(format!("Student {sid}"));
    s.yob.push(yob);
    s.sex.push(sex);
    s.gpa.push(f64::from(gpa_hundredths) / 100.0);
    gpa_hundredths
}

/// The courses one student takes: the obligatory one first, since its department boosts
/// the technical electives drawn next, then the non-technical electives.
fn draw_courses(rng: &mut ChaCha8Rng, pools: &Pools) -> Vec<usize> {
    let mut taken = weighted_sample(rng, &pools.obligatory, 1);
    let home = taken
        .first()
        .map(|&i| UNIVERSITY_COURSES[i].department)
        .unwrap_or_default();
    let boosted: Vec<(usize, u32)> = pools
        .technical
        .iter()
        .map(|&(i, w)| {
            let boost = if UNIVERSITY_COURSES[i].department == home {
                DEPARTMENT_AFFINITY
            } else {
                1
            };
            (i, w * boost)
        })
        .collect();
    let n_technical = rng.random_range(2..=3u32) as usize;
    taken.extend(weighted_sample(rng, &boosted, n_technical));
    let n_non_technical = rng.random_range(2..=3u32) as usize;
    taken.extend(weighted_sample(rng, &pools.non_technical, n_non_technical));
    taken
}

/// One enrollment: its grade, drawn around what the GPA predicts, then the books bought
/// for it, each new or used; keys continue from the rows already appended.
fn enroll(
    rng: &mut ChaCha8Rng,
    course_index: usize,
    sid: i64,
    gpa_hundredths: u32,
    c: &mut CourseColumns,
    b: &mut BookColumns,
) {
    let spec = &UNIVERSITY_COURSES[course_index];
    let scid = c.scid.len() as i64 + 1;
    // 40 + 15 * GPA, computed in hundredths, plus a uniform -10..=10 deviation.
    let expected = 40 + i64::from(gpa_hundredths) * 15 / 100;
    let grade = (expected + rng.random_range(-10..=10i64)).clamp(0, 100);
    c.scid.push(scid);
    c.sid.push(sid);
    c.course.push(spec.name);
    c.grade.push(grade);

    // A uniform non-empty subset of m books is a uniform mask in 1..2^m.
    let m = spec.books.len().min(31) as u32;
    let mask = if m == 0 {
        0
    } else {
        rng.random_range(1..(1u32 << m))
    };
    for (bit, textbook) in spec.books.iter().enumerate().take(m as usize) {
        if mask & (1 << bit) == 0 {
            continue;
        }
        let cents = if rng.random_ratio(USED_PERCENT, 100) {
            textbook.price_cents * USED_PRICE_PERCENT / 100
        } else {
            textbook.price_cents
        };
        b.bid.push(b.bid.len() as i64 + 1);
        b.scid.push(scid);
        b.book.push(textbook.title);
        b.price.push(f64::from(cents) / 100.0);
    }
}

/// The generated columns as the three tables of the family, with their Arrow types.
fn university_tables(s: StudentColumns, c: CourseColumns, b: BookColumns) -> ReleaseSet {
    let students_batch = batch(
        vec![
            Field::new("sid", DataType::Int64, false),
            text_field("name"),
            Field::new("yob", DataType::Int64, false),
            text_field("sex"),
            Field::new("gpa", DataType::Float64, false),
        ],
        vec![
            Arc::new(Int64Array::from(s.sid)),
            Arc::new(StringArray::from(s.name)),
            Arc::new(Int64Array::from(s.yob)),
            Arc::new(StringArray::from(s.sex)),
            Arc::new(Float64Array::from(s.gpa)),
        ],
    );
    let courses_batch = batch(
        vec![
            Field::new("scid", DataType::Int64, false),
            Field::new("sid", DataType::Int64, false),
            text_field("course"),
            Field::new("grade", DataType::Int64, false),
        ],
        vec![
            Arc::new(Int64Array::from(c.scid)),
            Arc::new(Int64Array::from(c.sid)),
            Arc::new(StringArray::from(c.course)),
            Arc::new(Int64Array::from(c.grade)),
        ],
    );
    let books_batch = batch(
        vec![
            Field::new("bid", DataType::Int64, false),
            Field::new("scid", DataType::Int64, false),
            text_field("book"),
            Field::new("price", DataType::Float64, false),
        ],
        vec![
            Arc::new(Int64Array::from(b.bid)),
            Arc::new(Int64Array::from(b.scid)),
            Arc::new(StringArray::from(b.book)),
            Arc::new(Float64Array::from(b.price)),
        ],
    );
    family(students_batch, courses_batch, books_batch)
}

#[derive(Default)]
struct StudentColumns {
    sid: Vec<i64>,
    name: Vec<String>,
    yob: Vec<i64>,
    sex: Vec<&'static str>,
    gpa: Vec<f64>,
}

#[derive(Default)]
struct CourseColumns {
    scid: Vec<i64>,
    sid: Vec<i64>,
    course: Vec<&'static str>,
    grade: Vec<i64>,
}

#[derive(Default)]
struct BookColumns {
    bid: Vec<i64>,
    scid: Vec<i64>,
    book: Vec<&'static str>,
    price: Vec<f64>,
}

/// The course hierarchy in ARX layout: `course;department;Technical|Non-technical;*`.
pub fn university_course_hierarchy_csv() -> String {
    let mut out = String::new();
    for spec in &UNIVERSITY_COURSES {
        let area = match department_of(spec) {
            Some(d) if d.technical => "Technical",
            _ => "Non-technical",
        };
        out.push_str(&format!("{};{};{};*\n", spec.name, spec.department, area));
    }
    out
}

/// The book hierarchy in ARX layout: `book;course subject;department;*`.
pub fn university_book_hierarchy_csv() -> String {
    let mut out = String::new();
    for spec in &UNIVERSITY_COURSES {
        for textbook in spec.books {
            out.push_str(&format!(
                "{};{};{};*\n",
                textbook.title, spec.name, spec.department
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

    const STUDENTS: usize = 200;

    fn spec(name: &str) -> &'static CourseSpec {
        UNIVERSITY_COURSES
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("{name} not in catalog"))
    }

    #[test]
    fn university_is_deterministic() {
        let a = university(STUDENTS, 7);
        let b = university(STUDENTS, 7);
        let c = university(STUDENTS, 8);
        for name in ["students", "courses", "books"] {
            assert_eq!(table(&a, name), table(&b, name), "{name}");
        }
        assert_ne!(table(&a, "courses"), table(&c, "courses"));
        assert_ne!(table(&a, "books"), table(&c, "books"));
    }

    /// Pins a digest of one seed so a change in rand / rand_chacha or in the draw order
    /// (which would silently change every experiment) fails here.
    #[test]
    fn university_output_is_pinned() {
        let set = university(STUDENTS, 42);
        let courses = table(&set, "courses");
        let books = table(&set, "books");
        let students = table(&set, "students");
        let first_courses = texts(courses, "course")[..3].join("|");
        let digest = (
            courses.num_rows(),
            books.num_rows(),
            ints(students, "yob").iter().sum::<i64>(),
            ints(courses, "grade").iter().sum::<i64>(),
            floats(books, "price")
                .iter()
                .map(|p| (p * 100.0).round() as i64)
                .sum::<i64>(),
            first_courses.as_str(),
        );
        assert_eq!(digest, PINNED_DIGEST);
    }

    const PINNED_DIGEST: (usize, usize, i64, i64, i64, &str) = (
        1201,
        2074,
        400485,
        92209,
        18668030,
        "Programming|Data Structures|Databases",
    );

    #[test]
    fn university_course_rules() {
        let set = university(STUDENTS, 1);
        let students = table(&set, "students");
        assert_eq!(students.num_rows(), STUDENTS);
        let courses = table(&set, "courses");
        let mut per_student: BTreeMap<i64, Vec<String>> = BTreeMap::new();
        for (sid, course) in ints(courses, "sid")
            .into_iter()
            .zip(texts(courses, "course"))
        {
            per_student.entry(sid).or_default().push(course);
        }
        assert_eq!(per_student.len(), STUDENTS, "every student takes courses");
        for (sid, taken) in &per_student {
            let distinct: HashSet<&String> = taken.iter().collect();
            assert_eq!(
                distinct.len(),
                taken.len(),
                "student {sid} repeats a course"
            );
            let count = |p: Pool| taken.iter().filter(|c| spec(c).pool == p).count();
            assert_eq!(count(Pool::Obligatory), 1, "student {sid}");
            assert!(
                (2..=3).contains(&count(Pool::TechnicalElective)),
                "student {sid}"
            );
            assert!(
                (2..=3).contains(&count(Pool::NonTechnicalElective)),
                "student {sid}"
            );
        }
        // Non-uniform popularity: the most taken elective is well ahead of the least.
        let mut popularity: HashMap<String, usize> = HashMap::new();
        for c in texts(courses, "course") {
            *popularity.entry(c).or_default() += 1;
        }
        assert_eq!(
            popularity.len(),
            UNIVERSITY_COURSES.len(),
            "all 22 courses used"
        );
        let max = popularity.values().max().copied().unwrap_or(0);
        let min = popularity.values().min().copied().unwrap_or(0);
        assert!(max >= 3 * min, "popularity too flat: {max} vs {min}");
    }

    #[test]
    fn university_catalog_is_consistent() {
        assert_eq!(UNIVERSITY_COURSES.len(), 22);
        let mut titles = HashSet::new();
        let mut names = HashSet::new();
        for c in &UNIVERSITY_COURSES {
            assert!(names.insert(c.name), "course {} twice", c.name);
            assert!(
                (2..=4).contains(&c.books.len()),
                "{} has {} books",
                c.name,
                c.books.len()
            );
            assert!(c.weight > 0, "{}", c.name);
            assert!(
                department_of(c).is_some(),
                "{} has unknown department",
                c.name
            );
            for b in c.books {
                assert!(titles.insert(b.title), "book {} in two courses", b.title);
                assert!(!b.title.contains([';', ',', '\'', '"']), "{}", b.title);
            }
        }
        let pools = |p: Pool| UNIVERSITY_COURSES.iter().filter(|c| c.pool == p).count();
        assert!(pools(Pool::TechnicalElective) >= 3);
        assert!(pools(Pool::NonTechnicalElective) >= 3);
    }

    #[test]
    fn university_books_per_enrollment() {
        let set = university(STUDENTS, 3);
        let courses = table(&set, "courses");
        let books = table(&set, "books");
        let course_of: HashMap<i64, String> = ints(courses, "scid")
            .into_iter()
            .zip(texts(courses, "course"))
            .collect();
        let mut bought: HashMap<i64, Vec<String>> = HashMap::new();
        for (scid, title) in ints(books, "scid").into_iter().zip(texts(books, "book")) {
            bought.entry(scid).or_default().push(title);
        }
        for (scid, course) in &course_of {
            let titles = bought.get(scid).map(Vec::as_slice).unwrap_or(&[]);
            assert!(!titles.is_empty(), "enrollment {scid} bought no book");
            let offered: HashSet<&str> = spec(course).books.iter().map(|b| b.title).collect();
            let distinct: HashSet<&str> = titles.iter().map(String::as_str).collect();
            assert_eq!(
                distinct.len(),
                titles.len(),
                "enrollment {scid} buys a book twice"
            );
            assert!(
                distinct.is_subset(&offered),
                "enrollment {scid}: {titles:?}"
            );
        }
        for p in floats(books, "price") {
            assert!(p > 0.0);
        }
    }

    #[test]
    fn university_keys_hold() {
        let set = university(STUDENTS, 5);
        for t in &set.tables {
            let pk = ints(&t.batch, &t.primary_key[0]);
            let distinct: HashSet<i64> = pk.iter().copied().collect();
            assert_eq!(
                distinct.len(),
                pk.len(),
                "{} primary key not unique",
                t.name
            );
            for fk in &t.foreign_keys {
                let parent = set
                    .tables
                    .iter()
                    .find(|p| p.name == fk.ref_table)
                    .expect("referenced table exists");
                let targets: HashSet<i64> = ints(&parent.batch, &fk.ref_columns[0])
                    .into_iter()
                    .collect();
                for v in ints(&t.batch, &fk.columns[0]) {
                    assert!(
                        targets.contains(&v),
                        "{}.{} = {v} dangles",
                        t.name,
                        fk.columns[0]
                    );
                }
            }
        }
        let gpa = floats(table(&set, "students"), "gpa");
        assert!(gpa.iter().all(|g| (1.0..=4.0).contains(g)));
        let grades = ints(table(&set, "courses"), "grade");
        assert!(grades.iter().all(|g| (0..=100).contains(g)));
    }

    #[test]
    fn hierarchy_files_cover_generated_values() {
        check_fixture(
            "fixtures/hierarchies/university_course.csv",
            &university_course_hierarchy_csv(),
        );
        check_fixture(
            "fixtures/hierarchies/university_book.csv",
            &university_book_hierarchy_csv(),
        );
        let course_h = read_hierarchy("fixtures/hierarchies/university_course.csv");
        let book_h = read_hierarchy("fixtures/hierarchies/university_book.csv");
        let set = university(STUDENTS, 11);
        for c in texts(table(&set, "courses"), "course") {
            assert!(course_h.contains_key(&c), "course {c} is not a leaf");
        }
        for b in texts(table(&set, "books"), "book") {
            assert!(book_h.contains_key(&b), "book {b} is not a leaf");
        }
        // Every row has the same depth and no label is both a leaf and an inner node.
        for h in [&course_h, &book_h] {
            let depths: BTreeSet<usize> = h.values().map(Vec::len).collect();
            assert_eq!(depths.len(), 1, "ragged hierarchy");
            for up in h.values() {
                for label in &up[..up.len() - 1] {
                    assert!(!h.contains_key(label), "{label} is leaf and inner node");
                }
            }
        }
    }
}
