import java.io.File;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import org.jacoco.core.analysis.Analyzer;
import org.jacoco.core.analysis.CoverageBuilder;
import org.jacoco.core.analysis.IClassCoverage;
import org.jacoco.core.analysis.ICounter;
import org.jacoco.core.analysis.ILine;
import org.jacoco.core.analysis.IMethodCoverage;
import org.jacoco.core.data.ExecutionDataStore;
import org.jacoco.core.tools.ExecFileLoader;

/**
 * Branch coverage of RocketMQ's loaded classes, from JaCoCo execution data (rmqcheck conform
 * --coverage; checkers/java/coverage.py reads what this prints).
 *
 * Arguments: the classes directory, then one or more .exec files. Prints one JSON object a line
 * for each method of a class under org/apache/rocketmq that ran (has execution data):
 * {"class", "method", "desc", "first", "last", "covered", "total", "lines": [[line, covered, total], ...]}
 * with "lines" the lines that hold branches.
 */
public final class RmqcheckCoverage {
    public static void main(String[] args) throws Exception {
        ExecFileLoader loader = new ExecFileLoader();
        for (int i = 1; i < args.length; i++) {
            loader.load(new File(args[i]));
        }
        ExecutionDataStore data = loader.getExecutionDataStore();
        CoverageBuilder builder = new CoverageBuilder();
        new Analyzer(data, builder).analyzeAll(new File(args[0], "org/apache/rocketmq"));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        for (IClassCoverage c : builder.getClasses()) {
            if (data.get(c.getId()) == null) {
                continue; // never loaded
            }
            for (IMethodCoverage m : c.getMethods()) {
                ICounter branches = m.getBranchCounter();
                StringBuilder lines = new StringBuilder();
                for (int n = m.getFirstLine(); n > 0 && n <= m.getLastLine(); n++) {
                    ICounter b = m.getLine(n).getBranchCounter();
                    if (b.getTotalCount() > 0) {
                        lines.append(lines.length() == 0 ? "" : ",").append('[').append(n).append(',')
                            .append(b.getCoveredCount()).append(',').append(b.getTotalCount()).append(']');
                    }
                }
                out.println("{\"class\":\"" + c.getName() + "\",\"method\":\"" + m.getName() + "\",\"desc\":\""
                    + m.getDesc() + "\",\"first\":" + m.getFirstLine() + ",\"last\":" + m.getLastLine()
                    + ",\"covered\":" + branches.getCoveredCount() + ",\"total\":" + branches.getTotalCount()
                    + ",\"lines\":[" + lines + "]}");
            }
        }
        out.flush();
    }
}
