'use strict';
// The JSON bodies of src/a2b/a2b_api.c, byte for byte: compact, field
// order of the reference's Spring records, strings escaped as
// src/bench/json.c does (only '"', '\\' and control characters; \n and \t
// short, the others \u00xx in lower case; UTF-8 as it is, where
// JSON.stringify would write \r, \b and \f), numbers as %.15g (or %.17g
// when that does not read back), prices as fixed-point cents.
//
// Rows come from node-pg in array mode: bigint columns as strings (printed
// as they are), float8 as numbers, text as strings.

const NEEDS_ESCAPE = /["\\\u0000-\u001f]/;
const ESCAPES = /["\\\u0000-\u001f]/g;

function escapeChar(c) {
  switch (c) {
    case '"': return '\\"';
    case '\\': return '\\\\';
    case '\n': return '\\n';
    case '\t': return '\\t';
    default: return '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0');
  }
}

function str(s) {
  return NEEDS_ESCAPE.test(s) ? '"' + s.replace(ESCAPES, escapeChar) + '"' : '"' + s + '"';
}

// C's %.<p>g.
function formatG(v, p) {
  if (v === 0) return Object.is(v, -0) ? '-0' : '0';
  const e = v.toExponential(p - 1); // d.ddd...e±x, correctly rounded
  const at = e.indexOf('e');
  const exp = Number(e.slice(at + 1));
  if (exp < -4 || exp >= p) {
    let mant = e.slice(0, at);
    if (mant.includes('.')) mant = mant.replace(/\.?0+$/, '');
    const ax = Math.abs(exp);
    return mant + 'e' + (exp < 0 ? '-' : '+') + (ax < 10 ? '0' : '') + ax;
  }
  let f = v.toFixed(Math.max(0, p - 1 - exp));
  if (f.includes('.')) f = f.replace(/\.?0+$/, '');
  return f;
}

// json_number: the shortest of %.15g and %.17g that reads back.
function num(v) {
  if (!Number.isFinite(v)) return 'null';
  const s = formatG(v, 15);
  return Number(s) === v ? s : formatG(v, 17);
}

// json_fixed(cents, 2), cents as node-pg's bigint string.
function cents(s) {
  const neg = s[0] === '-';
  const digits = (neg ? s.slice(1) : s).padStart(3, '0');
  return (neg ? '-' : '') + digits.slice(0, -2).replace(/^0+(?=\d)/, '') + '.' + digits.slice(-2);
}

// Readers: each takes the columns from c on (r is one row, an array).
const country = (r, c) => `{"countryId":${r[c]},"name":${str(r[c + 1])},"code":${str(r[c + 2])}}`;
const city = (r, c) =>
  `{"cityId":${r[c]},"country":${country(r, c + 3)},"name":${str(r[c + 1])},"code":${str(r[c + 2])}}`;
const location = (r, c) =>
  `{"locationId":${r[c]},"city":${city(r, c + 3)},"latitude":${num(r[c + 1])},"longitude":${num(r[c + 2])}}`;

// json_transfer: duration as a tsrange's text, each bound cut at 40 bytes
// as the C snprintf does (they are 19).
function transfer(r, c) {
  const duration = `["${r[c + 20].slice(0, 40)}","${r[c + 21].slice(0, 40)}")`;
  return `{"transferId":${r[c]},"origin":${location(r, c + 1)},"destination":${location(r, c + 10)}` +
    `,"capacity":${r[c + 19]},"duration":${str(duration)},"price":${cents(r[c + 22])}` +
    `,"description":${str(r[c + 23])}}`;
}

// json_user: "first last", each name cut at 50 bytes by the C snprintf (the
// route refuses longer names, so it never happens with our data).
const user = (r, c) =>
  `{"id":${r[c]},"name":${str(r[c + 1] + ' ' + r[c + 2])},"email":${str(r[c + 3])},"phone":${str(r[c + 4])}}`;

const booking = (r, c) =>
  `{"user":${user(r, c)},"transfer":${transfer(r, c + 5)},"state":${str(r[c + 29])},"description":${str(r[c + 30])}}`;

function list(rows, one, c) {
  let out = '[';
  for (let i = 0; i < rows.length; i++) out += (i ? ',' : '') + one(rows[i], c);
  return out + ']';
}

const STATUS_NAMES = {
  400: 'BAD_REQUEST', 404: 'NOT_FOUND', 405: 'METHOD_NOT_ALLOWED', 408: 'REQUEST_TIMEOUT',
  409: 'CONFLICT', 413: 'PAYLOAD_TOO_LARGE', 415: 'UNSUPPORTED_MEDIA_TYPE',
  417: 'EXPECTATION_FAILED', 431: 'REQUEST_HEADER_FIELDS_TOO_LARGE', 501: 'NOT_IMPLEMENTED',
  503: 'SERVICE_UNAVAILABLE', 505: 'HTTP_VERSION_NOT_SUPPORTED',
};

// a2b_result_error.
const error = (status, message) =>
  `{"status":"${STATUS_NAMES[status] || 'INTERNAL_SERVER_ERROR'}","code":${status},"message":${str(message)}}`;

module.exports = { str, num, formatG, cents, country, city, location, transfer, user, booking, list, error };
