-- W3 (relanon issue 5), the single-table case: UCI Adult as the ARX project distributes it
-- (30,162 rows without missing values) with ARX's generalization hierarchies loaded
-- unchanged. One table, no key, no child tables: each row is one individual.
-- Paths are relative to this file; the data set lives beside the repository.

-- One file is a one-table source named by its stem (the directory also holds the
-- hierarchy files, which are not tables). ARX writes it ';'-separated.
SET source = '../../shared/data/adult/adult.csv';
SET csv_delimiter = ';';
SET target = '../out/adult-release.sqlite';

-- ARX layout, leaf;level1;...;*. Leaves are counted from these files, so LM here is the
-- LM ARX reports: (leaves under the label - 1) / (leaves of the hierarchy - 1).
CREATE HIERARCHY sex_h       FROM CSV '../../shared/data/adult/adult_hierarchy_sex.csv';
CREATE HIERARCHY age_h       FROM CSV '../../shared/data/adult/adult_hierarchy_age.csv';
CREATE HIERARCHY race_h      FROM CSV '../../shared/data/adult/adult_hierarchy_race.csv';
CREATE HIERARCHY marital_h   FROM CSV '../../shared/data/adult/adult_hierarchy_marital-status.csv';
CREATE HIERARCHY education_h FROM CSV '../../shared/data/adult/adult_hierarchy_education.csv';
CREATE HIERARCHY country_h   FROM CSV '../../shared/data/adult/adult_hierarchy_native-country.csv';
CREATE HIERARCHY workclass_h FROM CSV '../../shared/data/adult/adult_hierarchy_workclass.csv';
CREATE HIERARCHY occupation_h FROM CSV '../../shared/data/adult/adult_hierarchy_occupation.csv';

-- No key list: adult has no primary key, so every row is one person (allowed only for an
-- entity table nothing references).
CREATE ENTITY person ON adult;

LABEL COLUMN adult.sex              AS QUASI IDENTIFIER USING sex_h;
LABEL COLUMN adult.age              AS QUASI IDENTIFIER USING age_h;
LABEL COLUMN adult.race             AS QUASI IDENTIFIER USING race_h;
LABEL COLUMN adult."marital-status" AS QUASI IDENTIFIER USING marital_h;
LABEL COLUMN adult.education        AS QUASI IDENTIFIER USING education_h;
LABEL COLUMN adult."native-country" AS QUASI IDENTIFIER USING country_h;
LABEL COLUMN adult.workclass        AS QUASI IDENTIFIER USING workclass_h;
LABEL COLUMN adult.occupation       AS QUASI IDENTIFIER USING occupation_h;
-- Income is what an adversary linking the QIs wants to learn, so it is SENSITIVE, not
-- INSENSITIVE: k-anonymity publishes it unchanged either way, but the report then measures
-- its KL-divergence, attack shows its posterior, and model = 'l-diversity', l = 2 needs no
-- other change.
LABEL COLUMN adult."salary-class"   AS SENSITIVE;

-- One table without child tables: TopDown's local recoding (see the README) loses far less
-- than the multi-relational clustering algorithms here and suppresses nobody.
ANONYMIZE person WITH (k = 10, algorithm = 'topdown');
