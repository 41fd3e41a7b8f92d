import fc from 'fast-check';
import { IllegalTransitionError, TransitionAlreadyDoneError } from '../../../../lib/core/errors';
import {
  ORDER_STATES,
  ORDER_TRANSITIONS,
  canTransition,
  explainRejectedTransition,
  planTransition,
  reachableFrom,
  statesOnlyAfter,
  type OrderState,
  type TransitionPlan,
} from '../../../../examples/reference/domain/state-machine';

const INITIAL: OrderState = 'PENDING';

/** The table as a set of "from→to" pairs, written out here so a changed table fails this test. */
const EXPECTED_PAIRS = [
  'PENDING→PAID',
  'PENDING→PAYMENT_FAILED',
  'PENDING→CANCELLED',
  'PAID→RESERVED',
  'PAID→CANCELLED',
  'RESERVED→CANCELLED',
  'PAYMENT_FAILED→PENDING',
  'PAYMENT_FAILED→CANCELLED',
];
const ALLOWED = new Set(ORDER_STATES.flatMap((from) => ORDER_TRANSITIONS[from].map((to) => `${from}→${to}`)));

/** Runs `action`, returning its plan or the error it threw. */
function outcomeOf(action: () => TransitionPlan): TransitionPlan | Error {
  try {
    return action();
  } catch (error) {
    return error as Error;
  }
}

const anyState = fc.constantFrom(...ORDER_STATES);

describe('Constant: ORDER_TRANSITIONS', () => {
  it('when read, it allows exactly the documented transitions', () => {
    // Act
    const pairs = [...ALLOWED];

    // Assess
    expect(pairs.sort()).toEqual([...EXPECTED_PAIRS].sort());
  });

  it('when a state is terminal (CANCELLED), it allows no way out', () => {
    // Act
    const reachable = reachableFrom('CANCELLED');

    // Assess
    expect(reachable.size).toBe(0);
  });

  it('when every state is checked, every one can still reach CANCELLED or is CANCELLED', () => {
    // Act
    const stuck = ORDER_STATES.filter((s) => s !== 'CANCELLED' && !reachableFrom(s).has('CANCELLED'));

    // Assess
    expect(stuck).toEqual([]);
  });
});

describe('Function: canTransition', () => {
  it('when asked about every pair, it agrees with the table', () => {
    // Act
    const answers = ORDER_STATES.flatMap((from) =>
      ORDER_STATES.map((to) => [`${from}→${to}`, canTransition(from, to)] as const),
    );

    // Assess
    for (const [pair, allowed] of answers) expect([pair, allowed]).toEqual([pair, ALLOWED.has(pair)]);
  });
});

describe('Function: reachableFrom', () => {
  it.each([
    { from: 'PENDING', reachable: ['PAID', 'PAYMENT_FAILED', 'CANCELLED', 'RESERVED', 'PENDING'] },
    { from: 'PAID', reachable: ['RESERVED', 'CANCELLED'] },
    { from: 'RESERVED', reachable: ['CANCELLED'] },
    { from: 'PAYMENT_FAILED', reachable: ['PENDING', 'CANCELLED', 'PAID', 'RESERVED', 'PAYMENT_FAILED'] },
  ] as const)('when starting at $from, it finds $reachable', ({ from, reachable }) => {
    // Act
    const found = reachableFrom(from);

    // Assess
    expect([...found].sort()).toEqual([...reachable].sort());
  });
});

describe('Function: planTransition', () => {
  it('when the transition is allowed and not yet done, it plans to apply it', () => {
    // Act
    const plan = planTransition('PENDING', 'PAID', ['RESERVED']);

    // Assess
    expect(plan).toEqual({ kind: 'apply', from: 'PENDING', to: 'PAID' });
  });

  it('when the entity already is in the target state, it is a duplicate to ignore', () => {
    // Act
    const plan = planTransition('PAID', 'PAID');

    // Assess
    expect(plan).toEqual({ kind: 'duplicate_ignored', current: 'PAID' });
  });

  it('when the entity is past the target (in `after`), it is a duplicate to ignore', () => {
    // Act
    const plan = planTransition('RESERVED', 'PAID', ['RESERVED']);

    // Assess
    expect(plan).toEqual({ kind: 'duplicate_ignored', current: 'RESERVED' });
  });

  it('when the entity is past the target but `after` does not say so, it is illegal', () => {
    // Act
    const act = (): TransitionPlan => planTransition('RESERVED', 'PAID');

    // Assess
    expect(act).toThrow(IllegalTransitionError);
    expect(act).toThrow('order cannot go from RESERVED to PAID');
  });

  it('when the target can never follow the current state, it throws IllegalTransitionError', () => {
    // Act
    const error = outcomeOf(() => planTransition('CANCELLED', 'PAID', ['RESERVED']));

    // Assess
    expect(error).toBeInstanceOf(IllegalTransitionError);
    expect((error as IllegalTransitionError).kind).toBe('permanent');
  });

  it('when planning from any state to any state with any `after`, it never applies a pair the table does not allow', () => {
    fc.assert(
      fc.property(anyState, anyState, fc.subarray([...ORDER_STATES]), (current, to, after) => {
        // Act
        const outcome = outcomeOf(() => planTransition(current, to, after));

        // Assess
        if (outcome instanceof Error) {
          expect(outcome).toBeInstanceOf(IllegalTransitionError);
          expect(ALLOWED.has(`${current}→${to}`)).toBe(false);
        } else if (outcome.kind === 'apply') {
          expect(ALLOWED.has(`${outcome.from}→${outcome.to}`)).toBe(true);
          expect(outcome).toEqual({ kind: 'apply', from: current, to });
          expect(after).not.toContain(current);
        } else {
          expect(current === to || after.includes(current)).toBe(true);
        }
      }),
    );
  });

  describe('Property: replays', () => {
    /**
     * Walks from PENDING over allowed transitions that never revisit a state; each step's `after`
     * is statesOnlyAfter(from, to). A walk round PENDING → PAYMENT_FAILED → PENDING is excluded:
     * see the cycle test below.
     */
    const simpleWalk: fc.Arbitrary<OrderState[]> = fc
      .array(fc.nat(), { maxLength: ORDER_STATES.length })
      .map((choices) => {
        const path: OrderState[] = [INITIAL];
        for (const choice of choices) {
          const current = path[path.length - 1] as OrderState;
          const options = ORDER_TRANSITIONS[current].filter((s) => !path.includes(s));
          if (options.length === 0) break;
          path.push(options[choice % options.length] as OrderState);
        }
        return path;
      });

    it('when each step of a walk is planned, it applies; replaying any applied step later never applies it again', () => {
      let replays = 0;
      fc.assert(
        fc.property(simpleWalk, (path) => {
          for (let i = 1; i < path.length; i += 1) {
            const [from, to] = [path[i - 1] as OrderState, path[i] as OrderState];

            // Act: the fresh step.
            const plan = planTransition(from, to, statesOnlyAfter(from, to));

            // Assess
            expect(plan).toEqual({ kind: 'apply', from, to });

            // Act: a duplicate of every step applied so far, delivered now.
            for (let j = 1; j <= i; j += 1) {
              const [replayedFrom, replayedTo] = [path[j - 1] as OrderState, path[j] as OrderState];
              const outcome = outcomeOf(() =>
                planTransition(to, replayedTo, statesOnlyAfter(replayedFrom, replayedTo)),
              );
              replays += 1;

              // Assess
              if (outcome instanceof Error) {
                expect(outcome).toBeInstanceOf(IllegalTransitionError);
              } else {
                expect(outcome).toEqual({ kind: 'duplicate_ignored', current: to });
              }
            }
          }
        }),
      );
      expect(replays).toBeGreaterThan(0);
    });

    it('when the retry cycle PENDING → PAYMENT_FAILED → PENDING is taken, a late duplicate of the failure cannot be told apart by state alone', () => {
      // Prepare: the order failed payment, was reset for a retry, and is PENDING again.
      const current: OrderState = 'PENDING';

      // Act: the first PENDING → PAYMENT_FAILED job is delivered again.
      const plan = planTransition(current, 'PAYMENT_FAILED', statesOnlyAfter('PENDING', 'PAYMENT_FAILED'));

      // Assess: it plans a second apply. The state is the same as before the first apply, so only
      // a fence carried by the job (the order version, the payment id) can reject this duplicate.
      expect(plan).toEqual({ kind: 'apply', from: 'PENDING', to: 'PAYMENT_FAILED' });
    });
  });
});

describe('Function: explainRejectedTransition', () => {
  it('when the entity already is in the target state, it explains a done transition', () => {
    // Act
    const error = explainRejectedTransition('PAID', 'PAID', []);

    // Assess
    expect(error).toBeInstanceOf(TransitionAlreadyDoneError);
    expect(error.message).toBe('order is already PAID; PAID was done before');
  });

  it('when the entity is past the target, it explains a done transition', () => {
    // Act
    const error = explainRejectedTransition('RESERVED', 'PAID', ['RESERVED']);

    // Assess
    expect(error).toBeInstanceOf(TransitionAlreadyDoneError);
    expect(error.name).toBe('TransitionAlreadyDoneError');
  });

  it('when given a cause (the failed conditional write), it keeps it on either error', () => {
    // Prepare
    const cause = new Error('ConditionalCheckFailedException');

    // Act
    const errors = [
      explainRejectedTransition('PAID', 'PAID', [], { cause }),
      explainRejectedTransition('CANCELLED', 'PAID', [], { cause }),
    ];

    // Assess
    expect(errors.map((e) => e.cause)).toEqual([cause, cause]);
  });

  it('when the entity is somewhere the target cannot follow, it explains an illegal transition', () => {
    // Act
    const error = explainRejectedTransition('CANCELLED', 'PAID', ['RESERVED']);

    // Assess
    expect(error).toBeInstanceOf(IllegalTransitionError);
    expect(error.message).toBe('order is CANCELLED; it cannot go to PAID');
  });

  it('when any pair is explained, it agrees with planTransition on duplicate versus illegal', () => {
    fc.assert(
      fc.property(anyState, anyState, fc.subarray([...ORDER_STATES]), (current, to, after) => {
        // Act
        const explained = explainRejectedTransition(current, to, after);
        const planned = outcomeOf(() => planTransition(current, to, after));

        // Assess
        if (explained instanceof TransitionAlreadyDoneError) {
          expect(planned).toEqual({ kind: 'duplicate_ignored', current });
        } else {
          expect(explained).toBeInstanceOf(IllegalTransitionError);
          expect(planned).not.toEqual({ kind: 'duplicate_ignored', current });
        }
      }),
    );
  });
});

describe('Function: statesOnlyAfter', () => {
  it.each([
    { from: 'PENDING', to: 'PAID', after: ['RESERVED'] },
    { from: 'PAID', to: 'RESERVED', after: [] },
    { from: 'PENDING', to: 'PAYMENT_FAILED', after: [] },
    { from: 'PAYMENT_FAILED', to: 'PENDING', after: ['PAID', 'RESERVED'] },
    { from: 'PENDING', to: 'CANCELLED', after: [] },
  ] as const)('when the step is $from → $to, only $after prove it happened', ({ from, to, after }) => {
    // Act
    const states = statesOnlyAfter(from, to);

    // Assess
    expect([...states].sort()).toEqual([...after].sort());
  });
});
