-- 000 (the thesis), Sec. 2.4: syntheticS, 1000 simulated students of a Computer Science program
-- with related majors, (major, YoB) -> courses -> books: about 20 courses per student (every
-- obligatory course, 6 core courses, 4-8 technical-area electives), 0-2 books per course
-- (relanon::generate::synthetic; `relanon generate synthetic-s --out out/synthetic_s.sqlite`).
-- The SQLite source carries its own keys. Paths are relative to this file.

SET source = '../out/synthetic_s.sqlite';
SET target = '../out/synthetic_s-release.sqlite';

-- Years of birth are 1984-1994: 2-, 4- and 8-year bands, then *.
CREATE HIERARCHY yob_h    AS BANDS (2, 4, 8);
-- major;faculty;*
CREATE HIERARCHY major_h  FROM CSV '../fixtures/hierarchies/synthetic_major.csv';
-- course;level group;area;*   e.g. CS301;CS3xx;CS;*
CREATE HIERARCHY course_h FROM CSV '../fixtures/hierarchies/synthetic_course.csv';
-- book;course;area;*
CREATE HIERARCHY book_h   FROM CSV '../fixtures/hierarchies/synthetic_book.csv';

-- A SQLite source carries these keys in its catalog (declaring them again is accepted); a
-- Parquet copy of the same warehouse needs them, so one file serves both.
ALTER TABLE students ADD PRIMARY KEY (student_id);
ALTER TABLE enrollments ADD PRIMARY KEY (enrollment_id);
ALTER TABLE purchases ADD PRIMARY KEY (purchase_id);
ALTER TABLE enrollments ADD FOREIGN KEY (student_id) REFERENCES students (student_id);
ALTER TABLE purchases ADD FOREIGN KEY (enrollment_id) REFERENCES enrollments (enrollment_id);

CREATE ENTITY student ON students (student_id);

LABEL COLUMN students.major       AS QUASI IDENTIFIER USING major_h;
LABEL COLUMN students.yob         AS QUASI IDENTIFIER USING yob_h;
-- GPA ~ Normal(2.8, 0.6) clipped to [0, 4]: 0.25-wide buckets from 1.0, one below it; none
-- holds more than ~18% of the students, and 4.00 (2-3% of them) lies on the last boundary.
LABEL COLUMN students.gpa         AS SENSITIVE BUCKETS (0, 1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0, 3.25, 3.5, 3.75, 4.0);
LABEL COLUMN enrollments.course   AS QUASI IDENTIFIER USING course_h;
LABEL COLUMN enrollments.grade    AS SENSITIVE;
LABEL COLUMN purchases.book       AS QUASI IDENTIFIER USING book_h;
-- Prices are 15.00-195.00; these buckets hold 10-15% of the purchases each.
LABEL COLUMN purchases.price      AS SENSITIVE BUCKETS (0, 40, 60, 80, 100, 120, 140, 160, 200);

ANONYMIZE student WITH (model = 'l-diversity', l = 3, algorithm = 'clustree', mapping = 'lsap', m = 4, s = 0.5);
