/**
 * Instants of the wire (docs/api.md §12.1): RFC 3339 date-times in, microseconds since the epoch
 * inside, the §2 timestamp form plus `Z` out. Built from the integer parts of the text, never
 * through a float of seconds or `Date.parse`, so every microsecond written is the one read back.
 */

const MICROS_PER_SECOND = 1_000_000;
const SECONDS_PER_DAY = 86_400;

/**
 * RFC 3339 §5.6 `date-time`: full-date, `T`, partial-time with at most six fractional digits, then
 * `Z` or a numeric offset. `T` and `Z` may be lower case (RFC 3339 §5.6, note). Ranges of the
 * fields are checked after the match, where the month's length is known.
 */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

function isLeapYear(year: number): boolean {
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
}

const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysInMonth(year: number, month: number): number {
  return month === 2 && isLeapYear(year) ? 29 : (MONTH_DAYS[month - 1] as number);
}

/**
 * Days from 1970-01-01 to a date of the proleptic Gregorian calendar, by whole 400-year eras
 * (146,097 days each) counted from March, so the leap day falls at the end of a year. `Date.UTC`
 * would do it for most years, but maps the years 0 to 99 onto the 1900s.
 */
export function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const monthFromMarch = month > 2 ? month - 3 : month + 9;
  const dayOfYear = Math.floor((153 * monthFromMarch + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

/** The fraction's digits as microseconds: `5` is 500,000 µs, `000001` is 1 µs. */
function fractionMicros(digits: string | undefined): number {
  return digits === undefined ? 0 : Number(digits.padEnd(6, '0'));
}

/**
 * Microseconds since the epoch of an RFC 3339 date-time (`2026-12-01T09:00:00Z`,
 * `2026-12-01T11:00:00.25+02:00`), or undefined when `text` is not one: another syntax, more than
 * six fractional digits, a field out of range (month 13, February 30, hour 24, an offset of 24
 * hours) or a leap second (60), which a count of microseconds cannot name. Exact while the count
 * is a safe integer (the years 1685 to 2255); further off, the nearest number.
 */
export function parseInstant(text: string): number | undefined {
  const m = DATE_TIME.exec(text);
  if (m === null) return undefined;
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetSeconds = 0;
  if (m[9] !== undefined) {
    const offsetHours = Number(m[10]);
    const offsetMinutes = Number(m[11]);
    if (offsetHours > 23 || offsetMinutes > 59) return undefined;
    offsetSeconds = (m[9] === '-' ? -1 : 1) * (offsetHours * 3600 + offsetMinutes * 60);
  }
  // Whole seconds stay below 2^38 for any four-digit year: exact before the one multiplication.
  const seconds = daysFromCivil(year, month, day) * SECONDS_PER_DAY + hour * 3600 + minute * 60 + second - offsetSeconds;
  return seconds * MICROS_PER_SECOND + fractionMicros(m[7]);
}

const pad2 = (n: number): string => (n < 10 ? `0${n}` : String(n));

/** The date of a count of days since 1970-01-01, the inverse of {@link daysFromCivil}. */
function civilFromDays(days: number): { year: number; month: number; day: number } {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra = Math.floor((dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365);
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const monthFromMarch = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * monthFromMarch + 2) / 5) + 1;
  const month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9;
  return { year: yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day };
}

/**
 * The wire form of an instant: UTC, six fractional digits, `Z` (`2026-12-01T09:00:00.000000Z`),
 * the §2 timestamp plus its zone. `micros` is a safe integer (the years 1685 to 2255, all of
 * four digits); anything else is a caller's bug, thrown as a RangeError.
 */
export function formatInstant(micros: number): string {
  if (!Number.isSafeInteger(micros)) throw new RangeError(`not a count of microseconds: ${micros}`);
  const seconds = Math.floor(micros / MICROS_PER_SECOND);
  const fraction = micros - seconds * MICROS_PER_SECOND;
  const days = Math.floor(seconds / SECONDS_PER_DAY);
  const secondOfDay = seconds - days * SECONDS_PER_DAY;
  const { year, month, day } = civilFromDays(days);
  const hour = Math.floor(secondOfDay / 3600);
  const minute = Math.floor((secondOfDay % 3600) / 60);
  return (
    `${String(year).padStart(4, '0')}-${pad2(month)}-${pad2(day)}T${pad2(hour)}:${pad2(minute)}:${pad2(secondOfDay % 60)}` +
    `.${String(fraction).padStart(6, '0')}Z`
  );
}
