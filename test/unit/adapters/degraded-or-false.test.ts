import { degradedOrFalse } from '../../../lib/adapters/aws/ssm-degrade-flag';

describe('Function: degradedOrFalse', () => {
  it('when the flag reads degraded, it returns true and logs nothing', async () => {
    // Prepare
    const warn = jest.fn();

    // Act
    const degraded = await degradedOrFalse(() => Promise.resolve(true), { warn });

    // Assess
    expect(degraded).toBe(true);
    expect(warn).not.toHaveBeenCalled();
  });

  it('when the flag cannot be read, it returns false and logs the error', async () => {
    // Prepare
    const warn = jest.fn();
    const failure = new Error('AccessDenied');

    // Act
    const degraded = await degradedOrFalse(() => Promise.reject(failure), { warn });

    // Assess
    expect(degraded).toBe(false);
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('could not read the degrade flag'), {
      error: failure,
    });
  });
});
