/* attnjit_signature_parse and attnjit_expressions_lower from C: declarations as text, the
 * canonical forms and lowered bodies of a variant's expressions, and every error of both
 * expressions in one message. Exits 0 on success. */
#include <stdio.h>
#include <string.h>

#include "attnjit/attnjit.h"
#include "check.h"

static void test_signature_parse(void) {
  const char* params[] = {"W:int", "cap:float"};
  const char* tensors[] = {"doc:int32[1]", "bias:float32[2]"};
  attnjit_signature* signature = NULL;
  CHECK(attnjit_signature_parse(&signature, params, 2, tensors, 2) == ATTNJIT_OK);
  if (signature == NULL) return;
  CHECK(signature->num_params == 2 && signature->num_tensors == 2);
  CHECK(strcmp(signature->params[0].name, "W") == 0);
  CHECK(signature->params[0].type == ATTNJIT_PARAM_INT);
  CHECK(strcmp(signature->params[1].name, "cap") == 0);
  CHECK(signature->params[1].type == ATTNJIT_PARAM_FLOAT);
  CHECK(strcmp(signature->tensors[0].name, "doc") == 0);
  CHECK(signature->tensors[0].type == ATTNJIT_TENSOR_INT32 && signature->tensors[0].rank == 1);
  CHECK(strcmp(signature->tensors[1].name, "bias") == 0);
  CHECK(signature->tensors[1].type == ATTNJIT_TENSOR_FLOAT32 && signature->tensors[1].rank == 2);
  attnjit_signature_destroy(signature);

  CHECK(attnjit_signature_parse(&signature, NULL, 0, NULL, 0) == ATTNJIT_OK);
  CHECK(signature != NULL && signature->num_params == 0 && signature->num_tensors == 0);
  attnjit_signature_destroy(signature);
  attnjit_signature_destroy(NULL);
}

static void test_signature_parse_refuses_bad_declarations(void) {
  attnjit_signature* signature = NULL;
  const char* no_rank[] = {"doc:"};
  CHECK(attnjit_signature_parse(&signature, NULL, 0, no_rank, 1) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(contains(attnjit_last_error(), "[RANK]"));
  CHECK(signature == NULL);
  const char* clash[] = {"W:int", "W:float"};
  CHECK(attnjit_signature_parse(&signature, clash, 2, NULL, 0) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  const char* builtin[] = {"q_idx:int"};
  CHECK(attnjit_signature_parse(&signature, builtin, 1, NULL, 0) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  const char* null_text[] = {NULL};
  CHECK(attnjit_signature_parse(&signature, null_text, 1, NULL, 0) ==
        ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(attnjit_signature_parse(&signature, NULL, 1, NULL, 0) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(attnjit_signature_parse(NULL, NULL, 0, NULL, 0) == ATTNJIT_ERROR_INVALID_ARGUMENT);
}

static void test_lower_sliding_window(void) {
  const char* params[] = {"W:int"};
  attnjit_signature* signature = NULL;
  CHECK(attnjit_signature_parse(&signature, params, 1, NULL, 0) == ATTNJIT_OK);
  if (signature == NULL) return;
  attnjit_variant_desc desc;
  attnjit_variant_desc_init(&desc);
  desc.mask = "q_idx >= kv_idx && q_idx - kv_idx < W && true";
  desc.score = "score * 2";
  desc.params = signature->params;
  desc.num_params = signature->num_params;
  attnjit_lowered_expressions* lowered = NULL;
  CHECK(attnjit_expressions_lower(&lowered, &desc) == ATTNJIT_OK);
  if (lowered != NULL) {
    CHECK(!contains(lowered->canonical_mask, "true")); /* folded away */
    CHECK(contains(lowered->canonical_mask, "W"));
    CHECK(contains(lowered->canonical_score, "2"));
    CHECK(lowered->mask_reads_tensors == 0);
    CHECK(contains(lowered->mask_body, "const int W = "));
    CHECK(contains(lowered->score_body, "score"));
    CHECK(contains(lowered->classify_body, "return"));
  }
  attnjit_lowered_expressions_destroy(lowered);
  attnjit_lowered_expressions_destroy(NULL);
  attnjit_signature_destroy(signature);
}

static void test_lower_says_a_tensor_mask_reads_tensors(void) {
  const attnjit_tensor_decl doc = {"doc", ATTNJIT_TENSOR_INT32, 1};
  attnjit_variant_desc desc;
  attnjit_variant_desc_init(&desc);
  desc.mask = "doc[q_idx] == doc[kv_idx]";
  desc.tensors = &doc;
  desc.num_tensors = 1;
  attnjit_lowered_expressions* lowered = NULL;
  CHECK(attnjit_expressions_lower(&lowered, &desc) == ATTNJIT_OK);
  CHECK(lowered != NULL && lowered->mask_reads_tensors == 1);
  CHECK(lowered != NULL && strcmp(lowered->canonical_score, "score") == 0); /* the default */
  attnjit_lowered_expressions_destroy(lowered);
}

static void test_lower_reports_both_expressions_errors(void) {
  attnjit_variant_desc desc;
  attnjit_variant_desc_init(&desc);
  desc.mask = "q_idx >= kv_idz";
  desc.score = "scor * 2";
  attnjit_lowered_expressions* lowered = NULL;
  CHECK(attnjit_expressions_lower(&lowered, &desc) == ATTNJIT_ERROR_PARSE);
  CHECK(lowered == NULL);
  CHECK(contains(attnjit_last_error(), "kv_idz"));
  CHECK(contains(attnjit_last_error(), "scor"));
  desc.score = "score";
  CHECK(attnjit_expressions_lower(&lowered, &desc) == ATTNJIT_ERROR_PARSE);
  CHECK(contains(attnjit_last_error(), "kv_idz") && !contains(attnjit_last_error(), "scor "));

  desc.version = 0;
  CHECK(attnjit_expressions_lower(&lowered, &desc) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(attnjit_expressions_lower(&lowered, NULL) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK(attnjit_expressions_lower(NULL, &desc) == ATTNJIT_ERROR_INVALID_ARGUMENT);
}

int main(void) {
  test_signature_parse();
  test_signature_parse_refuses_bad_declarations();
  test_lower_sliding_window();
  test_lower_says_a_tensor_mask_reads_tensors();
  test_lower_reports_both_expressions_errors();
  return check_summary();
}
