-- 001 (Nergiz, Clifton, Nergiz), Table II: four students, the courses they take and the books
-- they buy for them; k = 2 reproduces the paper's running example (Table III, Fig. 3).
--
-- The seed's Table II is unreadable in its text conversion: fixtures/table2 is reconstructed
-- from Tables V/VI and the prose (see relanon::generate::table2), and so is the book DGH below.
-- Paths are relative to this file.

SET source = '../fixtures/table2';
SET target = '../out/table2-release.sqlite';

-- Fig. 1, course DGH: eight leaves, so LM('Science') = 3 / (8 - 1). Rows are leaf, parent;
-- the root * is implied.
CREATE HIERARCHY course_h AS VALUES
    ('Math', 'Science'), ('CS', 'Science'), ('Physics', 'Science'), ('Chemistry', 'Science'),
    ('History', 'Social'), ('Religion', 'Social'), ('Economics', 'Social'), ('Philosophy', 'Social');

-- Fig. 1, book DGH: book, subject, area, then *.
CREATE HIERARCHY book_h AS VALUES
    ('Discrete', 'Math books', 'Science books'),
    ('Calc', 'Math books', 'Science books'),
    ('Dyn', 'Physics books', 'Science books'),
    ('Optics', 'Physics books', 'Science books'),
    ('Am.Hist', 'History books', 'Social books'),
    ('Eu.Hist', 'History books', 'Social books'),
    ('World Rel', 'Religion books', 'Social books'),
    ('Theology', 'Religion books', 'Social books');

-- A CSV directory carries no keys: declare them.
ALTER TABLE students ADD PRIMARY KEY (sid);
ALTER TABLE courses ADD PRIMARY KEY (scid);
ALTER TABLE books ADD PRIMARY KEY (bid);
ALTER TABLE courses ADD FOREIGN KEY (sid) REFERENCES students (sid);
ALTER TABLE books ADD FOREIGN KEY (scid) REFERENCES courses (scid);

CREATE ENTITY student ON students (sid);

LABEL COLUMN students.gpa   AS SENSITIVE;
LABEL COLUMN courses.course AS QUASI IDENTIFIER USING course_h;
LABEL COLUMN courses.grade  AS SENSITIVE;
LABEL COLUMN books.book     AS QUASI IDENTIFIER USING book_h;
LABEL COLUMN books.price    AS INSENSITIVE;

ANONYMIZE student WITH (k = 2, algorithm = 'miracle', threshold = 1, climit = 150);
