import {
  LiveStatus,
  renderStatusLine,
  statusRows,
  type StatusContext,
  type StatusRow,
} from '../../../lib/local/live-status';
import { JOB_TYPES, STREAM_CONSUMERS, syntheticSamples } from '../../fixtures/synthetic-report';

const CONTEXT: StatusContext = {
  scenario: 'smoke',
  phase: 'traffic',
  elapsedSeconds: 12.4,
  durationSeconds: 30,
  activeIncidents: ['provider outage'],
  traffic: 'orders 24',
};

function rows(at: number): StatusRow[] {
  const sample = syntheticSamples(40)[at];
  if (sample === undefined) throw new Error('no sample');
  return statusRows(sample, JOB_TYPES, STREAM_CONSUMERS, 'tenang-dev-');
}

describe('Module: live-status', () => {
  describe('Function: statusRows', () => {
    it('when a job type is backlogged and alarming, its row shows depth, in flight, age, DLQ and its alarms', () => {
      // Act: at 12 s the synthetic payment queue holds 3 and two payment alarms are in ALARM.
      const payment = rows(12)[0];

      // Assess
      expect(payment).toEqual({
        name: 'payment.capture',
        depth: '3',
        inFlight: '1',
        oldestAge: '3 s',
        dlq: '1',
        state: 'running',
        alarms: 'payment-consumer-retry-rate, payment-consumer',
      });
    });

    it('when a mapping is disabled, the state says PAUSED', () => {
      // Act
      const inventory = rows(31)[2];

      // Assess
      expect(inventory?.state).toBe('PAUSED');
    });

    it('when there are stream consumers, each gets a row with its iterator age and on-failure depth', () => {
      // Act
      const all = rows(25);

      // Assess
      expect(all.map((r) => r.name)).toEqual([
        'payment.capture',
        'notification.send',
        'inventory.reserve',
        'cache-invalidator (stream)',
        'outbox-relay (stream)',
      ]);
      expect(all[3]).toMatchObject({ depth: '-', oldestAge: '0 s', dlq: '3' });
    });
  });

  describe('Class: LiveStatus', () => {
    describe('Method: update', () => {
      it('when stdout is not a terminal, it prints at most one line per period and no control characters', () => {
        // Prepare
        let now = 0;
        const written: string[] = [];
        const status = new LiveStatus({
          write: (t) => written.push(t),
          tty: false,
          lineEveryMs: 5_000,
          now: () => now,
        });

        // Act
        for (now = 0; now <= 12_000; now += 1_000) status.update(CONTEXT, rows(12));

        // Assess: at 0, 5 and 10 s.
        expect(written).toHaveLength(3);
        expect(written.join('')).not.toContain('\u001b');
        expect(written[0]).toBe(renderStatusLine(CONTEXT, rows(12)));
      });

      it('when stdout is a terminal, each frame moves the cursor back over the previous one before drawing', () => {
        // Prepare
        const written: string[] = [];
        const status = new LiveStatus({ write: (t) => written.push(t), tty: true, columns: 200 });

        // Act
        status.update(CONTEXT, rows(12));
        status.update(CONTEXT, rows(13));

        // Assess
        const firstFrameLines = (written[0] ?? '').split('\n').length - 1;
        expect(written[0]).not.toContain('\u001b[');
        expect(written[1]?.startsWith(`\u001b[${firstFrameLines}F\u001b[J`)).toBe(true);
        expect(written[1]).toContain('payment.capture');
      });

      it('when a terminal is narrower than a line, the line is cut so the redraw can count lines', () => {
        // Prepare
        const written: string[] = [];
        const status = new LiveStatus({ write: (t) => written.push(t), tty: true, columns: 40 });

        // Act
        status.update(CONTEXT, rows(12));

        // Assess
        for (const line of (written[0] ?? '').split('\n')) expect(line.length).toBeLessThanOrEqual(40);
      });
    });

    describe('Method: message', () => {
      it('when a frame is shown on a terminal, messages go under the table, only the latest ones', () => {
        // Prepare
        const written: string[] = [];
        const status = new LiveStatus({
          write: (t) => written.push(t),
          tty: true,
          columns: 200,
          recentLines: 2,
        });
        status.update(CONTEXT, rows(12));

        // Act
        for (const m of ['one', 'two', 'three']) status.message(m);

        // Assess
        const last = written[written.length - 1] ?? '';
        expect(last).toContain('recent:');
        expect(last).toContain('  three');
        expect(last).toContain('  two');
        expect(last).not.toContain('  one');
      });

      it('when stdout is not a terminal, a message is printed at once on its own line', () => {
        // Prepare
        const written: string[] = [];
        const status = new LiveStatus({ write: (t) => written.push(t), tty: false });

        // Act
        status.message('incident: Redis down begins');

        // Assess
        expect(written).toEqual(['incident: Redis down begins\n']);
      });
    });

    describe('Method: stop', () => {
      it('when stopped, later updates draw nothing', () => {
        // Prepare
        const written: string[] = [];
        const status = new LiveStatus({ write: (t) => written.push(t), tty: true });
        status.update(CONTEXT, rows(1));
        status.stop();
        const count = written.length;

        // Act
        status.update(CONTEXT, rows(2));

        // Assess
        expect(written).toHaveLength(count);
      });
    });
  });
});
