package almanac.spark;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.UUID;

import org.apache.spark.sql.api.java.UDF2;

/**
 * Iceberg's bucket[N] transform as Spark UDFs, so that Spark computes a row's
 * tablet inside the JVM exactly as pyiceberg's BucketTransform does:
 * murmur3_x86_32 with seed 0 over the spec's single-value serialization, then
 * (hash & 0x7FFFFFFF) % N. Spark's own hash() uses seed 42 and hashes the
 * trailing bytes of strings one int per byte, so it cannot be used.
 *
 * NULL goes to bucket 0 (tablets are integers). Booleans and floating point
 * values, which Iceberg does not bucket, hash as a long: 0/1, or the float64
 * bits with -0.0 as 0.0 and every NaN as the canonical NaN.
 */
public final class IcebergBucket {
  private IcebergBucket() {}

  private static final int C1 = 0xcc9e2d51;
  private static final int C2 = 0x1b873593;

  private static int mixK1(int k1) {
    k1 *= C1;
    k1 = Integer.rotateLeft(k1, 15);
    return k1 * C2;
  }

  private static int mixH1(int h1, int k1) {
    h1 ^= k1;
    h1 = Integer.rotateLeft(h1, 13);
    return h1 * 5 + 0xe6546b64;
  }

  private static int fmix(int h1, int length) {
    h1 ^= length;
    h1 ^= h1 >>> 16;
    h1 *= 0x85ebca6b;
    h1 ^= h1 >>> 13;
    h1 *= 0xc2b2ae35;
    h1 ^= h1 >>> 16;
    return h1;
  }

  /** murmur3_x86_32, seed 0, of the 8 little-endian bytes of {@code value}. */
  public static int hashLong(long value) {
    int h1 = mixH1(0, mixK1((int) value));
    h1 = mixH1(h1, mixK1((int) (value >>> 32)));
    return fmix(h1, 8);
  }

  /** murmur3_x86_32, seed 0, of {@code bytes} (standard tail handling). */
  public static int hashBytes(byte[] bytes) {
    int length = bytes.length;
    int h1 = 0;
    int blocks = length & ~3;
    for (int i = 0; i < blocks; i += 4) {
      int k1 = (bytes[i] & 0xff)
          | (bytes[i + 1] & 0xff) << 8
          | (bytes[i + 2] & 0xff) << 16
          | (bytes[i + 3] & 0xff) << 24;
      h1 = mixH1(h1, mixK1(k1));
    }
    int k1 = 0;
    switch (length & 3) {
      case 3:
        k1 ^= (bytes[blocks + 2] & 0xff) << 16;
      case 2:
        k1 ^= (bytes[blocks + 1] & 0xff) << 8;
      case 1:
        k1 ^= bytes[blocks] & 0xff;
        h1 ^= mixK1(k1);
      default:
        break;
    }
    return fmix(h1, length);
  }

  public static int bucket(int hash, int n) {
    return (hash & Integer.MAX_VALUE) % n;
  }

  /** Integers, dates (days) and timestamps (microseconds) as a long. */
  public static final class OfLong implements UDF2<Long, Integer, Integer> {
    @Override
    public Integer call(Long value, Integer n) {
      return value == null ? 0 : bucket(hashLong(value), n);
    }
  }

  /** TIMESTAMP without time zone: microseconds of the wall clock read as UTC. */
  public static final class OfLocalTimestamp implements UDF2<LocalDateTime, Integer, Integer> {
    @Override
    public Integer call(LocalDateTime value, Integer n) {
      if (value == null) {
        return 0;
      }
      long micros = Math.addExact(
          Math.multiplyExact(value.toEpochSecond(ZoneOffset.UTC), 1_000_000L),
          value.getNano() / 1000);
      return bucket(hashLong(micros), n);
    }
  }

  /** Strings as their UTF-8 bytes. */
  public static final class OfString implements UDF2<String, Integer, Integer> {
    @Override
    public Integer call(String value, Integer n) {
      return value == null ? 0 : bucket(hashBytes(value.getBytes(StandardCharsets.UTF_8)), n);
    }
  }

  /** UUIDs (canonical strings) as their 16 big-endian bytes. */
  public static final class OfUuid implements UDF2<String, Integer, Integer> {
    @Override
    public Integer call(String value, Integer n) {
      if (value == null) {
        return 0;
      }
      UUID uuid = UUID.fromString(value);
      byte[] bytes = new byte[16];
      long high = uuid.getMostSignificantBits();
      long low = uuid.getLeastSignificantBits();
      for (int i = 0; i < 8; i++) {
        bytes[i] = (byte) (high >>> (56 - 8 * i));
        bytes[8 + i] = (byte) (low >>> (56 - 8 * i));
      }
      return bucket(hashBytes(bytes), n);
    }
  }

  /** Binary values as their bytes. */
  public static final class OfBinary implements UDF2<byte[], Integer, Integer> {
    @Override
    public Integer call(byte[] value, Integer n) {
      return value == null ? 0 : bucket(hashBytes(value), n);
    }
  }

  /** Decimals as the minimal big-endian two's complement of the unscaled value. */
  public static final class OfDecimal implements UDF2<BigDecimal, Integer, Integer> {
    @Override
    public Integer call(BigDecimal value, Integer n) {
      return value == null ? 0 : bucket(hashBytes(value.unscaledValue().toByteArray()), n);
    }
  }

  /** Floating point values (not bucketable in Iceberg) as float64 bits. */
  public static final class OfDouble implements UDF2<Double, Integer, Integer> {
    @Override
    public Integer call(Double value, Integer n) {
      if (value == null) {
        return 0;
      }
      double v = value;
      long bits = Double.isNaN(v) ? 0x7ff8000000000000L : Double.doubleToRawLongBits(v + 0.0);
      return bucket(hashLong(bits), n);
    }
  }
}
