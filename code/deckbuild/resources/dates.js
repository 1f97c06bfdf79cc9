// deckbuild: a document's `date`, read and formatted the way Quarto does it (quarto-cli
// src/core/date.ts: resolveAndFormatDate, parsePandocDate, formatDate), so that the
// JavaScript engine's own date parser (V8, as in Quarto's Deno) reads free text the same
// way. Run by dates.py: `node dates.js '{"value": ..., "format": ..., "locale": ...}'`;
// prints {"text": ...} or {"text": "Invalid Date", "invalid": true}. The code is our own.
//   value   the date as written, or "today" / "now", or {"mtime": ms} (last-modified)
//   format  "iso" (Quarto's default), "full" / "long" / "medium" / "short" (the locale's
//           date styles) or a day.js format string ("Do MMMM YYYY", "DD.MM.YYYY", [text])
//   locale  the document's `lang` (Quarto sets day.js's locale from it), default "en"
"use strict";

const pad = (n, width) => String(Math.abs(n)).padStart(width, "0");

// -- reading ----------------------------------------------------------------------------
// Quarto first tries these formats, in order, as whole-string matches (local time)
const FIXED = [
  [/^(\d{2})\/(\d{2})\/(\d{4})$/, "mdy"], [/^(\d{2})-(\d{2})-(\d{4})$/, "mdy"],
  [/^(\d{2})\/(\d{2})\/(\d{2})$/, "mdy"], [/^(\d{2})-(\d{2})-(\d{2})$/, "mdy"],
  [/^(\d{4})-(\d{2})-(\d{2})$/, "ymd"], [/^(\d{2}) (\d{2}) (\d{4})$/, "dmy"],
  [/^(\d{2}) (\d{2}), (\d{4})$/, "mdy"],
];
// then day.js's own reading of an ISO-like string (local time), then the engine's Date()
const DAYJS_ISO = /^(\d{4})[-/]?(\d{1,2})?[-/]?(\d{0,2})[Tt\s]*(\d{1,2})?:?(\d{1,2})?:?(\d{1,2})?[.:]?(\d+)?$/;

function fixedDate(text) {
  for (const [re, order] of FIXED) {
    const m = text.match(re);
    if (!m) continue;
    const n = m.slice(1).map(Number);
    let [y, mo, d] = order === "ymd" ? n : order === "dmy" ? [n[2], n[1], n[0]] : [n[2], n[0], n[1]];
    if (m[3].length === 2 && order === "mdy") y += 2000;
    if (mo < 1 || mo > 12 || d < 1 || d > 31) continue;
    return new Date(y, mo - 1, d);
  }
  return null;
}

function readDate(value) {
  if (value && typeof value === "object") return new Date(value.mtime);
  if (value === "now") return new Date();
  if (value === "today") {
    const today = new Date();
    today.setHours(0, 0, 0, 0);
    return today;
  }
  const text = String(value);
  const fixed = fixedDate(text);
  if (fixed) return fixed;
  const m = /Z$/i.test(text) ? null : text.match(DAYJS_ISO);
  if (m) {
    const ms = (m[7] || "0").substring(0, 3);
    return new Date(+m[1], (+m[2] || 1) - 1, +m[3] || 1, +m[4] || 0, +m[5] || 0, +m[6] || 0, +ms);
  }
  return new Date(text);
}

// -- writing ----------------------------------------------------------------------------
function names(locale, options, count, make) {
  const fmt = new Intl.DateTimeFormat(locale, options);
  return Array.from({length: count}, (_, i) => fmt.format(make(i)));
}

function ordinal(n, locale) {
  const lang = locale.toLowerCase().split("-")[0];
  if (lang === "en") {
    const v = n % 100;
    return n + (["th", "st", "nd", "rd"][(v - 20) % 10] || ["th", "st", "nd", "rd"][v] || "th");
  }
  if (lang === "fr") return n === 1 ? "1er" : String(n);
  return `${n}.`;
}

function isoWeek(date) {
  const d = new Date(date.getFullYear(), date.getMonth(), date.getDate());
  d.setDate(d.getDate() + 3 - ((d.getDay() + 6) % 7));     // the Thursday of its week
  const first = new Date(d.getFullYear(), 0, 4);
  return [1 + Math.round(((d - first) / 864e5 - 3 + ((first.getDay() + 6) % 7)) / 7), d.getFullYear()];
}

function offset(date, separator) {
  const minutes = -date.getTimezoneOffset();
  const sign = minutes < 0 ? "-" : "+";
  return `${sign}${pad(Math.floor(Math.abs(minutes) / 60), 2)}${separator}${pad(Math.abs(minutes) % 60, 2)}`;
}

const TOKENS = /\[([^\]]+)]|Do|Q|X|x|k{1,2}|W{1,2}|GGGG|Y{1,4}|M{1,4}|D{1,2}|d{1,4}|H{1,2}|h{1,2}|a|A|m{1,2}|s{1,2}|Z{1,2}|SSS/g;

function formatWith(date, pattern, locale) {
  const months = o => names(locale, {month: o}, 12, i => new Date(2000, i, 1));
  const days = o => names(locale, {weekday: o}, 7, i => new Date(2000, 0, 2 + i));  // a Sunday
  const Y = date.getFullYear(), M = date.getMonth(), D = date.getDate(), H = date.getHours();
  const h = H % 12 || 12, [week, weekYear] = isoWeek(date);
  const values = {
    YY: pad(Y, 4).slice(-2), YYYY: pad(Y, 4), M: M + 1, MM: pad(M + 1, 2),
    MMM: () => months("short")[M], MMMM: () => months("long")[M], D, DD: pad(D, 2),
    Do: () => ordinal(D, locale), d: date.getDay(), dd: () => days("short")[date.getDay()].slice(0, 2),
    ddd: () => days("short")[date.getDay()], dddd: () => days("long")[date.getDay()],
    H, HH: pad(H, 2), h, hh: pad(h, 2), k: H || 24, kk: pad(H || 24, 2),
    a: H < 12 ? "am" : "pm", A: H < 12 ? "AM" : "PM",
    m: date.getMinutes(), mm: pad(date.getMinutes(), 2), s: date.getSeconds(),
    ss: pad(date.getSeconds(), 2), SSS: pad(date.getMilliseconds(), 3),
    Z: offset(date, ":"), ZZ: offset(date, ""), Q: Math.floor(M / 3) + 1,
    X: Math.floor(date.getTime() / 1000), x: date.getTime(), W: week, WW: pad(week, 2),
    GGGG: pad(weekYear, 4),
  };
  return pattern.replace(TOKENS, (match, literal) => {
    if (literal !== undefined) return literal;
    const value = values[match];
    if (value === undefined) return match;
    return String(typeof value === "function" ? value() : value);
  });
}

function formatDate(date, format, locale) {
  if (["full", "long", "medium", "short"].includes(format)) {
    return date.toLocaleString(locale, {dateStyle: format});
  }
  return formatWith(date, format === "iso" ? "YYYY-MM-DD" : format, locale);
}

function main(request) {
  const date = readDate(request.value);
  if (isNaN(date.getTime())) return {text: "Invalid Date", invalid: true};
  return {text: formatDate(date, request.format || "iso", request.locale || "en")};
}

if (require.main === module) {
  process.stdout.write(JSON.stringify(main(JSON.parse(process.argv[2]))));
}

module.exports = {main, readDate, formatDate};
