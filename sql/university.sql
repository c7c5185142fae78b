-- 001 (Nergiz, Clifton, Nergiz), Sec. V: 1000 synthetic students, 22 courses, 1 obligatory +
-- 2-3 technical + 2-3 non-technical electives each, 2-4 textbooks per course
-- (relanon::generate::university). The SQLite source carries its own keys.
-- Paths are relative to this file.

SET source = '../out/university.sqlite';
SET target = '../out/university-release.sqlite';

CREATE HIERARCHY yob_h    AS BANDS (5, 10, 20);
-- One column per row: M and F sit directly under *.
CREATE HIERARCHY sex_h    AS VALUES ('M'), ('F');
-- course;department;Technical|Non-technical;*
CREATE HIERARCHY course_h FROM CSV '../fixtures/hierarchies/university_course.csv';
-- book;course subject;department;*
CREATE HIERARCHY book_h   FROM CSV '../fixtures/hierarchies/university_book.csv';

-- A SQLite source carries these keys in its catalog (declaring them again is accepted); a
-- Parquet copy of the same warehouse needs them, so one file serves both.
ALTER TABLE students ADD PRIMARY KEY (sid);
ALTER TABLE courses ADD PRIMARY KEY (scid);
ALTER TABLE books ADD PRIMARY KEY (bid);
ALTER TABLE courses ADD FOREIGN KEY (sid) REFERENCES students (sid);
ALTER TABLE books ADD FOREIGN KEY (scid) REFERENCES courses (scid);

CREATE ENTITY student ON students (sid);

LABEL COLUMN students.name  AS IDENTIFIER;
LABEL COLUMN students.yob   AS QUASI IDENTIFIER USING yob_h;
LABEL COLUMN students.sex   AS QUASI IDENTIFIER USING sex_h;
LABEL COLUMN students.gpa   AS SENSITIVE;
LABEL COLUMN courses.course AS QUASI IDENTIFIER USING course_h;
LABEL COLUMN courses.grade  AS SENSITIVE;
LABEL COLUMN books.book     AS QUASI IDENTIFIER USING book_h;
LABEL COLUMN books.price    AS INSENSITIVE;

ANONYMIZE student WITH (k = 5, algorithm = 'miraclex', climit = 150, threshold = 0.3);

-- Written against the source schema; relanon rewrites it to read the release.
CREATE VIEW course_load AS
    SELECT s.yob, COUNT(*) AS n
    FROM students s JOIN courses c ON c.sid = s.sid
    GROUP BY s.yob;
