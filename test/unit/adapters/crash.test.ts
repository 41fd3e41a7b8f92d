import { crashHookFrom, INJECTED_POINT_LINE, noCrash, type CrashPoint } from '../../../lib/adapters/crash';

const ALL_POINTS: readonly CrashPoint[] = [
  'before-side-effect',
  'after-side-effect',
  'after-commit',
  'during-invalidation',
];

/** Silences and records what the hook writes to stderr. */
function captureStderr(): jest.SpyInstance {
  return jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
}

/** Calls the hook at every point and returns the points at which it killed. */
function pointsKilledAt(spec: string | undefined): CrashPoint[] {
  const killedAt: CrashPoint[] = [];
  let current: CrashPoint | undefined;
  const hook = crashHookFrom(spec, () => killedAt.push(current as CrashPoint));
  for (const point of ALL_POINTS) {
    current = point;
    hook(point);
  }
  return killedAt;
}

afterEach(() => {
  jest.restoreAllMocks();
});

describe('Function: crashHookFrom', () => {
  it('when one point is listed, it kills only at that point', () => {
    // Prepare
    captureStderr();

    // Act
    const killedAt = pointsKilledAt('after-side-effect');

    // Assess
    expect(killedAt).toEqual(['after-side-effect']);
  });

  it('when several points are listed with spaces and a trailing comma, it kills at each of them only', () => {
    // Prepare
    captureStderr();

    // Act
    const killedAt = pointsKilledAt(' before-side-effect , after-commit ,');

    // Assess
    expect(killedAt).toEqual(['before-side-effect', 'after-commit']);
  });

  it('when it kills, it first says where on stderr', () => {
    // Prepare
    const stderr = captureStderr();
    const kill = jest.fn();
    const hook = crashHookFrom('during-invalidation', kill);

    // Act
    hook('during-invalidation');

    // Assess
    expect(stderr).toHaveBeenCalledWith('[tenang] injected crash at during-invalidation\n');
    expect(kill).toHaveBeenCalledTimes(1);
    expect(stderr.mock.invocationCallOrder[0]).toBeLessThan(kill.mock.invocationCallOrder[0] as number);
  });

  it('when it kills or hangs, the line it prints is the one INJECTED_POINT_LINE reads (the platform counts on it)', () => {
    // Prepare
    const stderr = captureStderr();
    const hook = crashHookFrom('holding-lock,hang:after-commit', jest.fn(), jest.fn());

    // Act
    hook('holding-lock');
    hook('after-commit');

    // Assess
    const read = stderr.mock.calls.map(([line]) => INJECTED_POINT_LINE.exec(String(line))?.slice(1, 3));
    expect(read).toEqual([
      ['crash', 'holding-lock'],
      ['hang', 'after-commit'],
    ]);
  });

  it('when a listed name is not a crash point, it never kills', () => {
    // Prepare
    const stderr = captureStderr();

    // Act
    const killedAt = pointsKilledAt('after-side-effects,AFTER-COMMIT');

    // Assess
    expect(killedAt).toEqual([]);
    expect(stderr).not.toHaveBeenCalled();
  });

  it.each([
    { case: 'undefined', spec: undefined },
    { case: 'empty', spec: '' },
    { case: 'only commas and spaces', spec: ' , ,' },
  ])('when the spec is $case, it returns the no-crash hook', ({ spec }) => {
    // Prepare
    const kill = jest.fn();

    // Act
    const hook = crashHookFrom(spec, kill);
    for (const point of ALL_POINTS) hook(point);

    // Assess
    expect(hook).toBe(noCrash);
    expect(kill).not.toHaveBeenCalled();
  });

  it('when no kill is injected and the point is not listed, it does not touch the process', () => {
    // Prepare
    const processKill = jest.spyOn(process, 'kill').mockImplementation(() => true);
    const hook = crashHookFrom('after-commit');

    // Act
    hook('before-side-effect');

    // Assess
    expect(processKill).not.toHaveBeenCalled();
  });

  it('when no kill is injected and the point is listed, it sends SIGKILL to its own process', () => {
    // Prepare
    captureStderr();
    const processKill = jest.spyOn(process, 'kill').mockImplementation(() => true);
    const hook = crashHookFrom('after-commit');

    // Act
    hook('after-commit');

    // Assess
    expect(processKill).toHaveBeenCalledWith(process.pid, 'SIGKILL');
  });
});
