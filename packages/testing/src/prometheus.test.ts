import { describe, expect, it } from "vitest";
import { matching, sampleValue, samples, seriesValue } from "./prometheus.js";

describe("samples", () => {
  it("reads every series line with its labels unescaped, and skips comments", () => {
    const text = [
      "# HELP tick_x_total X",
      "# TYPE tick_x_total counter",
      'tick_x_total{app="worker",path="a\\\\b",say="\\"hi\\"",lines="1\\n2"} 12',
      "process_cpu_seconds_total 1.5",
      "",
    ].join("\n");
    expect(samples(text)).toEqual([
      { name: "tick_x_total", labels: { app: "worker", path: "a\\b", say: '"hi"', lines: "1\n2" }, value: 12 },
      { name: "process_cpu_seconds_total", labels: {}, value: 1.5 },
    ]);
  });

  it("reads the special values as the format writes them (prom-client writes NaN as Nan) and ignores a timestamp", () => {
    const text = ["a_gauge +Inf", "b_gauge -Inf", "c_gauge Nan", "d_gauge NaN", "e_gauge 2.5e-3 1700000000000", 'f_bucket{le="+Inf"} 7'].join("\n");
    const values = Object.fromEntries(samples(text).map((s) => [s.name, s.value]));
    expect(values).toMatchObject({ a_gauge: Infinity, b_gauge: -Infinity, e_gauge: 0.0025, f_bucket: 7 });
    expect(values.c_gauge).toBeNaN();
    expect(values.d_gauge).toBeNaN();
    expect(sampleValue("garbage")).toBeNaN();
  });

  it("matching and seriesValue pick series by name and a subset of labels", () => {
    const text = ['s{slot="call",state="capacity",app="w"} 50', 's{slot="start",state="capacity",app="w"} 40', 's_total{slot="call"} 3'].join("\n");
    expect(matching(text, "s", { slot: "call" }).map((s) => s.value)).toEqual([50]);
    expect(seriesValue(text, "s")).toBe(90);
    expect(seriesValue(text, "s", { state: "nope" })).toBe(0);
  });
});
