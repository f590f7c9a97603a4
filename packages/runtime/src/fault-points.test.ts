import { describe, expect, it } from "vitest";
import { FaultInjected, NO_FAULTS, parseFaultPoints } from "./fault-points.js";

describe("parseFaultPoints", () => {
  it("is inert for points not named, and throws at a named one as often as its count says", () => {
    const faults = parseFaultPoints("a,b:throw:2");
    expect(() => faults.hit("other")).not.toThrow();
    expect(() => faults.hit("a")).toThrow(FaultInjected);
    expect(() => faults.hit("a")).not.toThrow();
    expect(() => faults.hit("b")).toThrow(FaultInjected);
    expect(() => faults.hit("b")).toThrow(FaultInjected);
    expect(() => faults.hit("b")).not.toThrow();
    expect(faults.fired()).toEqual({ a: 1, b: 2 });
  });

  it("exit calls the exit hook; stop calls the stop hook and then carries on from that point", () => {
    const events: string[] = [];
    const faults = parseFaultPoints(
      "crash:exit,freeze:stop:*",
      () => {
        events.push("exit");
        throw new Error("exited");
      },
      () => void events.push("stop"),
    );
    expect(() => faults.hit("crash")).toThrow("exited");
    expect(() => faults.hit("freeze")).not.toThrow();
    faults.hit("freeze");
    expect(events).toEqual(["exit", "stop", "stop"]);
  });

  it("refuses an unknown mode", () => {
    expect(() => parseFaultPoints("x:explode")).toThrow(/mode must be exit, throw or stop/);
    expect(() => NO_FAULTS.hit("anything")).not.toThrow();
  });
});
