-- 003 (Nergiz, Gok, Ozkanli), Table 1: nine people, the running example of hybrid
-- k-anonymization. Fig. 1's hierarchies are missing from the seed's text: these are the
-- spec's reconstruction (seed-003-hybrid.md Sec. 5, "Worked fixture"), leaves the values
-- seen. At k = 3 the lattice (Incognito) releases [2,2,4] at LM 0.6235; hybrid at p = 10
-- relocates q4 (2 of the 27 QI cells) and releases [1,1,3] at LM 0.2806.
-- Paths are relative to this file.

SET source = '../fixtures/table1';
SET target = '../out/table1-release.sqlite';

CREATE HIERARCHY age_h AS VALUES
    ('12', '[11-20]', '[11-30]'), ('17', '[11-20]', '[11-30]'), ('19', '[11-20]', '[11-30]'),
    ('23', '[21-30]', '[11-30]'),
    ('33', '[31-40]', '[31-50]'), ('38', '[31-40]', '[31-50]'),
    ('41', '[41-50]', '[31-50]'), ('43', '[41-50]', '[31-50]'), ('48', '[41-50]', '[31-50]');

CREATE HIERARCHY nation_h AS VALUES
    ('Greece', 'E.EU', 'EU'), ('Turkey', 'E.EU', 'EU'), ('Spain', 'W.EU', 'EU'),
    ('Brazil', 'S.AM', 'AM'), ('Peru', 'S.AM', 'AM'), ('USA', 'N.AM', 'AM'),
    ('Canada', 'N.AM', 'AM');

-- Zip: level i masks the last i digits.
CREATE HIERARCHY zip_h AS VALUES
    ('47906', '4790*', '479**', '47***', '4****'),
    ('47907', '4790*', '479**', '47***', '4****'),
    ('49703', '4970*', '497**', '49***', '4****'),
    ('49705', '4970*', '497**', '49***', '4****'),
    ('49812', '4981*', '498**', '49***', '4****'),
    ('49001', '4900*', '490**', '49***', '4****');

-- A CSV directory carries no keys: declare one.
ALTER TABLE people ADD PRIMARY KEY (id);

CREATE ENTITY person ON people (id);

LABEL COLUMN people.age    AS QUASI IDENTIFIER USING age_h;
LABEL COLUMN people.nation AS QUASI IDENTIFIER USING nation_h;
LABEL COLUMN people.zip    AS QUASI IDENTIFIER USING zip_h;
LABEL COLUMN people.salary AS SENSITIVE;

ANONYMIZE person WITH (k = 3, algorithm = 'hybrid', p = 10);
