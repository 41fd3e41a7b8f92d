import { DurationSchema, formatAge, parseDurationMs, parseSince } from '../../../lib/ops/duration';
import { CountSchema, RateSchema } from '../../../lib/ops/options';

describe('Module: ops/duration', () => {
  describe('Function: parseDurationMs', () => {
    it.each([
      ['90s', 90_000],
      ['30m', 1_800_000],
      ['2h', 7_200_000],
      ['1d', 86_400_000],
    ])('when given %s, it returns %d ms', (text, ms) => {
      expect(parseDurationMs(text)).toBe(ms);
    });

    it.each(['', '0m', '30', 'm', '1.5h', '-2h', '2 h', '3w'])(
      'when given %p, it throws a message naming the format',
      (text) => {
        expect(() => parseDurationMs(text)).toThrow('must be a duration like 90s, 30m, 2h or 1d');
      },
    );

    it('when used as a schema, it transforms the text', () => {
      expect(DurationSchema.parse('5m')).toBe(300_000);
    });
  });

  describe('Function: parseSince', () => {
    const now = new Date('2026-03-01T12:00:00Z');

    it('when given a duration, it counts back from now', () => {
      expect(parseSince('2h', now).toISOString()).toBe('2026-03-01T10:00:00.000Z');
    });

    it('when given an ISO instant, it returns it', () => {
      expect(parseSince('2026-02-28T08:30:00+01:00', now).toISOString()).toBe('2026-02-28T07:30:00.000Z');
    });

    it('when given neither, it throws', () => {
      expect(() => parseSince('yesterday', now)).toThrow('ISO-8601');
    });
  });

  describe('Function: formatAge', () => {
    it.each([
      [42_000, '42s'],
      [192_000, '3m12s'],
      [7_500_000, '2h05m'],
    ])('when given %d ms, it prints %s', (ms, text) => {
      expect(formatAge(ms)).toBe(text);
    });
  });

  describe('Schemas: RateSchema and CountSchema', () => {
    it('when given 5/s or 2.5, it returns the rate', () => {
      expect(RateSchema.parse('5/s')).toBe(5);
      expect(RateSchema.parse('2.5')).toBe(2.5);
    });

    it('when given 0/s or text, it fails', () => {
      expect(RateSchema.safeParse('0/s').success).toBe(false);
      expect(RateSchema.safeParse('fast').success).toBe(false);
    });

    it('when given 0 or a fraction, the count fails', () => {
      expect(CountSchema.safeParse('0').success).toBe(false);
      expect(CountSchema.safeParse('1.5').success).toBe(false);
      expect(CountSchema.parse('12')).toBe(12);
    });
  });
});
