import {
  alarmIntervals,
  escapeHtml,
  niceStep,
  renderLineChart,
  renderReportHtml,
  seriesSegments,
  yAxis,
} from '../../../lib/local/report-html';
import { syntheticReport } from '../../fixtures/synthetic-report';

describe('Module: report-html', () => {
  describe('Function: niceStep and yAxis', () => {
    it.each([
      [0.3, 0.5],
      [1, 1],
      [1.25, 2],
      [2.2, 2.5],
      [7, 10],
      [130, 200],
    ])('when the raw step is %p, the nice step is %p', (raw, nice) => {
      // Act & Assess
      expect(niceStep(raw)).toBeCloseTo(nice);
    });

    it('when the largest value is 5, the axis tops at 6 with steps of 2', () => {
      // Act & Assess
      expect(yAxis(5)).toEqual({ top: 6, step: 2 });
    });

    it('when every value is 0, the axis still has a height', () => {
      // Act & Assess
      expect(yAxis(0)).toEqual({ top: 1, step: 1 });
    });
  });

  describe('Function: seriesSegments', () => {
    it('when a series has gaps (null), it is split into segments', () => {
      // Act
      const segments = seriesSegments(
        [0, 1, 2, 3, 4],
        [1, 2, null, 3, null],
        (x) => x,
        (y) => y,
      );

      // Assess
      expect(segments).toEqual([['0.0,1.0', '1.0,2.0'], ['3.0,3.0']]);
    });
  });

  describe('Function: renderLineChart', () => {
    it('when a series is all zeros, it still draws a line (an idle queue is data, not an empty chart)', () => {
      // Act
      const svg = renderLineChart({
        id: 'c',
        title: 't',
        unit: 'u',
        xs: [0, 1, 2],
        series: [{ name: 'q', values: [0, 0, 0] }],
        bands: [],
      });

      // Assess
      expect(svg).toMatch(/<polyline class="series" data-series="q"/);
    });

    it('when a series name holds markup, it is escaped', () => {
      // Act
      const svg = renderLineChart({
        id: 'c',
        title: '<b>',
        unit: 'u',
        xs: [0, 1],
        series: [{ name: '<i>"x"', values: [1, 2] }],
        bands: [],
      });

      // Assess
      expect(svg).not.toContain('<i>');
      expect(svg).toContain('&lt;i&gt;&quot;x&quot;');
    });
  });

  describe('Function: alarmIntervals', () => {
    it('when an alarm goes into ALARM and back, and another stays, it returns closed and open intervals', () => {
      // Act
      const intervals = alarmIntervals(
        [
          { atMs: 5_000, alarm: 'b', from: 'OK', to: 'ALARM' },
          { atMs: 1_000, alarm: 'a', from: 'OK', to: 'ALARM' },
          { atMs: 3_000, alarm: 'a', from: 'ALARM', to: 'OK' },
          { atMs: 0, alarm: 'c', from: 'INSUFFICIENT_DATA', to: 'OK' },
        ],
        10,
      );

      // Assess
      expect(Object.fromEntries(intervals)).toEqual({ a: [{ from: 1, to: 3 }], b: [{ from: 5, to: 10 }] });
    });
  });

  describe('Function: renderReportHtml', () => {
    it('when rendered, the page loads nothing from outside and has a chart per series group', () => {
      // Act
      const html = renderReportHtml(syntheticReport());

      // Assess
      expect(html).toContain("default-src 'none'");
      expect(html).not.toMatch(/<script|<link|src=|href=/i);
      expect(html.match(/data-chart="/g)).toHaveLength(6);
    });

    it('when a DLQ body holds markup, it is shown as text', () => {
      // Act
      const html = renderReportHtml(syntheticReport());

      // Assess
      expect(html).toContain('not JSON &lt;script&gt;alert(1)&lt;/script&gt;');
      expect(escapeHtml(`<a href='x'>&</a>`)).toBe('&lt;a href=&#39;x&#39;&gt;&amp;&lt;/a&gt;');
    });
  });
});
