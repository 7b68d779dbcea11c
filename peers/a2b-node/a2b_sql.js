'use strict';
// The statements of src/a2b/a2b_pg.c (the `stmts` table), word for word, so
// that the peer asks PostgreSQL exactly what `shootout a2b-server` asks. The
// schema is not created here: `shootout a2b-server --db postgres://... --init`
// (a2b_pg_init) creates and fills schema a2b, and both servers read it.

const locationColumns = (l, c, k) =>
  `${l}.id, (${l}.location->>'latitude')::float8, (${l}.location->>'longitude')::float8, ` +
  `${c}.id, ${c}.name, ${c}.code, ${k}.id, ${k}.name, ${k}.code`;

const TRANSFER_COLUMNS =
  `t.id, ${locationColumns('lo', 'co', 'ko')}, ${locationColumns('ld', 'cd', 'kd')}` +
  ", t.capacity, to_char(lower(t.duration), 'YYYY-MM-DD HH24:MI:SS')," +
  " to_char(upper(t.duration), 'YYYY-MM-DD HH24:MI:SS'), (t.price::numeric * 100)::bigint," +
  ' t.description';

const TRANSFER_JOINS =
  ' JOIN a2b.locations lo ON lo.id = t.origin JOIN a2b.cities co ON co.id = lo.city_id' +
  ' JOIN a2b.countries ko ON ko.id = co.country_id' +
  ' JOIN a2b.locations ld ON ld.id = t.destination JOIN a2b.cities cd ON cd.id = ld.city_id' +
  ' JOIN a2b.countries kd ON kd.id = cd.country_id';

const BOOKING_SELECT =
  `SELECT u.id, u.first_name, u.last_name, u.email, u.phone, ${TRANSFER_COLUMNS}` +
  ', ut.state, ut.description FROM a2b.users_transfers ut JOIN a2b.users u ON u.id = ut.user_id' +
  ` JOIN a2b.transfers t ON t.id = ut.transfer_id${TRANSFER_JOINS}`;

// A list and whether its parent exists, in one statement: column 0 is the
// parent's existence, the list's columns follow (NULL in the one row of an
// empty list).
const withParent = (parent, list, by) =>
  `SELECT p.ok, q.* FROM (SELECT EXISTS (${parent}) AS ok) p LEFT JOIN (${list}) q ON true` +
  ` ORDER BY ${by}`;

const SQL = {
  countries: 'SELECT id, name, code FROM a2b.countries ORDER BY id',
  cities: withParent(
    'SELECT 1 FROM a2b.countries WHERE id = $1',
    'SELECT c.id, c.name, c.code, k.id, k.name, k.code FROM a2b.cities c' +
      ' JOIN a2b.countries k ON k.id = c.country_id WHERE c.country_id = $1',
    '2'),
  locations: withParent(
    'SELECT 1 FROM a2b.cities WHERE id = $2 AND country_id = $1',
    `SELECT ${locationColumns('l', 'c', 'k')} FROM a2b.locations l` +
      ' JOIN a2b.cities c ON c.id = l.city_id' +
      ' JOIN a2b.countries k ON k.id = c.country_id' +
      ' WHERE l.city_id = $2 AND c.country_id = $1',
    '2'),
  transfers: `SELECT ${TRANSFER_COLUMNS} FROM a2b.transfers t${TRANSFER_JOINS}` +
    ' WHERE t.origin = $1 AND t.destination = $2 AND t.date = $3::date ORDER BY t.id',
  // Columns: user exists, transfer exists, rows inserted. A concurrent
  // duplicate is a conflict, not an error.
  book: 'WITH u AS (SELECT EXISTS (SELECT 1 FROM a2b.users WHERE id = $1) AS ok),' +
    ' t AS (SELECT EXISTS (SELECT 1 FROM a2b.transfers WHERE id = $2) AS ok),' +
    ' ins AS (INSERT INTO a2b.users_transfers(user_id, transfer_id, state, description)' +
    " SELECT $1, $2, 'BOOKED', $3 FROM u, t WHERE u.ok AND t.ok" +
    ' ON CONFLICT DO NOTHING RETURNING 1)' +
    ' SELECT u.ok, t.ok, (SELECT count(*) FROM ins) FROM u, t',
  bookings: withParent('SELECT 1 FROM a2b.users WHERE id = $1',
    `${BOOKING_SELECT} WHERE ut.user_id = $1`, '7'),
  booking: `${BOOKING_SELECT} WHERE ut.user_id = $1 AND ut.transfer_id = $2`,
  update_booking: 'UPDATE a2b.users_transfers SET state = $3, description = $4' +
    ' WHERE user_id = $1 AND transfer_id = $2',
  user: 'SELECT id, first_name, last_name, email, phone FROM a2b.users WHERE id = $1',
  update_user: 'UPDATE a2b.users SET first_name = $2, last_name = $3 WHERE id = $1',
  ready: 'SELECT 1',
};

// a2b_pg.c prepares with explicit parameter types (int8, text); node-pg
// prepares named statements with the types PostgreSQL infers from the text,
// which are the same here (bigint ids, text strings) except the date of a
// search, inferred as date from `$3::date` rather than cast from text: the
// same result for the dates the route lets through (real YYYY-MM-DD).

module.exports = { SQL };
