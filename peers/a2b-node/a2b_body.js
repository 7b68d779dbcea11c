'use strict';
// What the routes read besides the path, with the rules of
// src/a2b/a2b_body.c: strict JSON object bodies whose wanted fields are
// strings or null, the /transfers query string, path ids and dates.

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const MAX_DEPTH = 32; // A2B_BODY_MAX_DEPTH

class BodyError extends Error {}

// In a /u pattern a pair is one code point, so only a lone surrogate is
// category Cs: String.prototype.isWellFormed, which Node 18 lacks.
const LONE_SURROGATE = /\p{Cs}/u;

// Every string (keys too) free of NUL and unpaired surrogates, nesting
// bounded: what a2b_body.c refuses while it reads, checked after JSON.parse.
function checkValue(v, depth) {
  if (typeof v === 'string') {
    if (v.includes('\u0000')) throw new BodyError('NUL in a string');
    if (LONE_SURROGATE.test(v)) throw new BodyError('unpaired surrogate');
    return;
  }
  if (v === null || typeof v !== 'object') return;
  if (depth > MAX_DEPTH) throw new BodyError('nested too deeply');
  if (Array.isArray(v)) {
    for (const x of v) checkValue(x, depth + 1);
    return;
  }
  for (const k of Object.keys(v)) {
    checkValue(k, depth + 1);
    checkValue(v[k], depth + 1);
  }
}

// buf: the raw body. Returns {field: string|null} for the wanted names, or
// throws a BodyError with a2b_body.c's message where there is one (JSON
// syntax errors get JSON.parse's).
function parseBody(buf, names) {
  let text;
  try {
    text = utf8.decode(buf);
  } catch {
    throw new BodyError('invalid UTF-8');
  }
  if (!/^[ \t\r\n]*\{/.test(text)) throw new BodyError('the body must be a JSON object');
  let v;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new BodyError('invalid JSON: ' + e.message);
  }
  checkValue(v, 1);
  const out = {};
  for (const n of names) {
    const x = Object.prototype.hasOwnProperty.call(v, n) ? v[n] : null;
    if (x !== null && typeof x !== 'string') throw new BodyError('a field must be a string or null');
    out[n] = x;
  }
  return out;
}

function hexval(c) {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

// Percent-decodes s ('+' is a space) into a string of bytes; null when
// malformed, or when it holds a NUL or cap - 1 bytes or more.
function decode(s, cap) {
  const out = [];
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c === 43) {
      c = 32;
    } else if (c === 37) {
      if (i + 2 >= s.length) return null;
      const hi = hexval(s.charCodeAt(i + 1)), lo = hexval(s.charCodeAt(i + 2));
      if (hi < 0 || lo < 0) return null;
      c = (hi << 4) | lo;
      i += 2;
    }
    if (c === 0 || out.length + 1 >= cap) return null;
    out.push(c);
  }
  return String.fromCharCode(...out);
}

// a2b_query_get: {value} when present, null when absent, undefined when
// malformed. The first occurrence wins.
function queryGet(query, name, cap) {
  if (!query) return null;
  let p = 0;
  while (p < query.length) {
    let end = query.indexOf('&', p);
    if (end < 0) end = query.length;
    const part = query.slice(p, end);
    const eq = part.indexOf('=');
    const rawKey = eq >= 0 ? part.slice(0, eq) : part;
    const key = decode(rawKey, 64);
    if (key === null && rawKey.length < 64) return undefined;
    if (key === name) {
      const v = decode(eq >= 0 ? part.slice(eq + 1) : '', cap);
      return v === null ? undefined : { value: v };
    }
    p = end + 1;
  }
  return null;
}

// a2b_parse_id: 1 to 18 ASCII digits.
const ID = /^[0-9]{1,18}$/;
const isId = (s) => ID.test(s);

// a2b_data_parse_day: a real YYYY-MM-DD.
const MDAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
function isDay(s) {
  if (!/^[0-9]{4}-[0-9]{2}-[0-9]{2}$/.test(s)) return false;
  const y = Number(s.slice(0, 4)), m = Number(s.slice(5, 7)), d = Number(s.slice(8, 10));
  if (m < 1 || m > 12 || d < 1 || d > MDAYS[m - 1]) return false;
  const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
  return !(m === 2 && d === 29 && !leap);
}

module.exports = { BodyError, parseBody, queryGet, isId, isDay };
